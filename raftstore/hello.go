package raftstore

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sort"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/fsm"
)

// Hello: what a node says of itself to any node the CA vouches for, member
// or not. A node being bootstrapped asks every node of the cluster file
// whether it already holds a cluster (bootstrap.go); a node waiting to be
// added asks who the cluster's voters are, to know whose Raft traffic to
// accept (join.go); a leader asks a node it is about to add whether it is
// free to join.
//
// After the preamble (protoHello and the asker's cluster id) the node
// answers with one frame and closes:
//
//	len (4, big endian) | hello (JSON, len bytes)
//
// JSON, not the log's binary encoding: the answer is small, asked once a
// second at most, and read by operators' tools too.

// The states a node reports.
const (
	helloMember  = "member"  // it holds a configuration that names it
	helloRemoved = "removed" // it holds one that does not
	helloWaiting = "waiting" // no configuration; it knows the cluster it waits for
	helloEmpty   = "empty"   // no configuration, no cluster known
)

// maxHelloBytes bounds an answer: a cluster of many members and removed
// nodes fits many times over.
const maxHelloBytes = 1 << 20

// hello is a node's answer.
type hello struct {
	Node    string `json:"node"`
	State   string `json:"state"`
	Cluster string `json:"cluster,omitempty"` // hex; "" while none was given
	// Bootstrap: the node was told to form a new cluster (and has not yet).
	Bootstrap bool        `json:"bootstrap,omitempty"`
	Leader    string      `json:"leader,omitempty"`
	Term      uint64      `json:"term,omitempty"`
	Voters    []helloPeer `json:"voters,omitempty"`
	Nonvoters []helloPeer `json:"nonvoters,omitempty"`
	Removed   []helloGone `json:"removed,omitempty"`
}

type helloPeer struct {
	ID   string `json:"id"`
	Raft string `json:"raft"`
}

type helloGone struct {
	ID           string   `json:"id"`
	Fingerprints []string `json:"fingerprints"` // hex SHA-256 of each certificate
}

// helloNow is this node's hello.
func (s *Store) helloNow() hello {
	h := hello{Node: s.cfg.NodeID, State: helloEmpty, Cluster: s.clusterID().String()}
	cfg := s.raft.GetConfiguration().Configuration()
	if len(cfg.Servers) == 0 {
		if s.join.known() {
			h.State = helloWaiting
		}
		h.Bootstrap = s.cfg.Bootstrap
		return h
	}
	h.State = helloRemoved
	for _, srv := range cfg.Servers {
		p := helloPeer{ID: string(srv.ID), Raft: string(srv.Address)}
		if srv.Suffrage == raft.Voter {
			h.Voters = append(h.Voters, p)
		} else {
			h.Nonvoters = append(h.Nonvoters, p)
		}
		if string(srv.ID) == s.cfg.NodeID {
			h.State = helloMember
		}
	}
	_, leader := s.raft.LeaderWithID()
	h.Leader, h.Term = string(leader), s.raft.CurrentTerm()
	if gone, err := s.fsm.RemovedNodes(); err == nil {
		for _, g := range gone {
			hg := helloGone{ID: g.ID}
			for _, fp := range g.Fingerprints {
				hg.Fingerprints = append(hg.Fingerprints, hex.EncodeToString(fp[:]))
			}
			h.Removed = append(h.Removed, hg)
		}
	}
	return h
}

// serveHello answers one hello connection.
func (s *Store) serveHello(conn net.Conn) {
	defer conn.Close()
	select {
	case <-s.started:
	case <-s.closing:
		return
	}
	b, _ := json.Marshal(s.helloNow())
	conn.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...))
}

// askHello asks node id at addr what it is. With TLS its certificate must
// name id and not be one of a removed node's.
func (s *Store) askHello(id, addr string) (hello, error) {
	conn, err := dialProto(s.dialAddr(id, addr), s.cfg.DialTimeout, protoHello, s.clusterID(), s.peerClientTLS(id))
	if err != nil {
		return hello{}, err
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(2 * s.cfg.DialTimeout))
	var n [4]byte
	if _, err := io.ReadFull(conn, n[:]); err != nil {
		return hello{}, fmt.Errorf("hello from %s: %w", id, err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxHelloBytes {
		return hello{}, fmt.Errorf("hello from %s: %d bytes, over %d", id, size, maxHelloBytes)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(conn, b); err != nil {
		return hello{}, fmt.Errorf("hello from %s: %w", id, err)
	}
	var h hello
	if err := json.Unmarshal(b, &h); err != nil {
		return hello{}, fmt.Errorf("hello from %s: %w", id, err)
	}
	if h.Node != id {
		return hello{}, fmt.Errorf("hello from %s: it says it is %q", id, h.Node)
	}
	return h, nil
}

// cluster is the cluster id a hello names (zero when none or malformed).
func (h hello) cluster() fsm.ClusterID {
	id, _ := fsm.ParseClusterID(h.Cluster)
	return id
}

// voterSet is the hello's voters as "id@addr" strings, sorted: two
// answers naming the same voters have the same set.
func (h hello) voterSet() string {
	out := make([]string, 0, len(h.Voters))
	for _, v := range h.Voters {
		out = append(out, v.ID+"@"+v.Raft)
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

// votes reports whether the answering node is a voter of the configuration
// it reports.
func (h hello) votes() bool {
	for _, v := range h.Voters {
		if v.ID == h.Node {
			return true
		}
	}
	return false
}
