package transport

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"time"

	"github.com/idemgate/idemgate/command"
)

// Hello: what a node says of itself to any node the CA vouches for, member
// or not. A node being bootstrapped asks every node of the cluster file
// whether it already holds a cluster; a node waiting to be added asks who
// the cluster's voters are, to know whose Raft traffic to accept; a leader
// asks a node it is about to add whether it is free to join.
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
	HelloMember  = "member"  // it holds a configuration that names it
	HelloRemoved = "removed" // it holds one that does not
	HelloWaiting = "waiting" // no configuration; it knows the cluster it waits for
	HelloEmpty   = "empty"   // no configuration, no cluster known
)

// maxHelloBytes bounds an answer: a cluster of many members and removed
// nodes fits many times over.
const maxHelloBytes = 1 << 20

// Hello is a node's answer.
type Hello struct {
	Node    string `json:"node"`
	State   string `json:"state"`
	Cluster string `json:"cluster,omitempty"` // hex; "" while none was given
	// Bootstrap: the node was told to form a new cluster (and has not yet).
	Bootstrap bool        `json:"bootstrap,omitempty"`
	Leader    string      `json:"leader,omitempty"`
	Term      uint64      `json:"term,omitempty"`
	Voters    []HelloPeer `json:"voters,omitempty"`
	Nonvoters []HelloPeer `json:"nonvoters,omitempty"`
	Removed   []HelloGone `json:"removed,omitempty"`
	// Features are what the node's transport reads beyond the first
	// forwarding protocol (FeatureTracedApply): a peer sends a frame of
	// a later kind only to a node that names it here. An older node
	// names none.
	Features []string `json:"features,omitempty"`
}

// HelloPeer is a member as a hello names it.
type HelloPeer struct {
	ID   string `json:"id"`
	Raft string `json:"raft"`
}

// HelloGone is a removed node and the certificates it was removed with.
type HelloGone struct {
	ID           string   `json:"id"`
	Fingerprints []string `json:"fingerprints"` // hex SHA-256 of each certificate
}

// answerHello answers one hello connection and closes it.
func (m *Mux) answerHello(conn net.Conn) {
	defer conn.Close()
	h, ok := m.cfg.Hello()
	if !ok {
		return
	}
	h.Features = features
	b, _ := json.Marshal(h)
	conn.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...))
}

// AskHello asks node p.ID at p.Addr what it is, waiting at most twice
// p.Timeout for the answer. With TLS its certificate must prove the id (as
// p.TLS checks); the answer must name it too.
func AskHello(p Peer) (Hello, error) {
	conn, err := dialProto(p.Addr, p.Timeout, protoHello, p.Cluster, p.TLS)
	if err != nil {
		return Hello{}, err
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(2 * p.Timeout))
	var n [4]byte
	if _, err := io.ReadFull(conn, n[:]); err != nil {
		return Hello{}, fmt.Errorf("hello from %s: %w", p.ID, err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxHelloBytes {
		return Hello{}, fmt.Errorf("hello from %s: %d bytes, over %d", p.ID, size, maxHelloBytes)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(conn, b); err != nil {
		return Hello{}, fmt.Errorf("hello from %s: %w", p.ID, err)
	}
	var h Hello
	if err := json.Unmarshal(b, &h); err != nil {
		return Hello{}, fmt.Errorf("hello from %s: %w", p.ID, err)
	}
	if h.Node != p.ID {
		return Hello{}, fmt.Errorf("hello from %s: it says it is %q", p.ID, h.Node)
	}
	return h, nil
}

// ClusterID is the cluster id the hello names (zero when none or
// malformed).
func (h Hello) ClusterID() command.ClusterID {
	id, _ := command.ParseClusterID(h.Cluster)
	return id
}

// VoterSet is the hello's voters as "id@addr" strings, sorted: two answers
// naming the same voters have the same set.
func (h Hello) VoterSet() string {
	out := make([]string, 0, len(h.Voters))
	for _, v := range h.Voters {
		out = append(out, v.ID+"@"+v.Raft)
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

// Has reports whether the hello names feature among its Features.
func (h Hello) Has(feature string) bool {
	return slices.Contains(h.Features, feature)
}

// Votes reports whether the answering node is a voter of the configuration
// it reports.
func (h Hello) Votes() bool {
	for _, v := range h.Voters {
		if v.ID == h.Node {
			return true
		}
	}
	return false
}
