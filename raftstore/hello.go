package raftstore

import (
	"encoding/hex"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/raftstore/transport"
)

// Hello (the transport package has the protocol): what this node says of
// itself, and asking a peer. A node being bootstrapped asks every node of
// the cluster file whether it already holds a cluster (bootstrap.go); a node
// waiting to be added asks who the cluster's voters are, to know whose Raft
// traffic to accept (join.go); a leader asks a node it is about to add
// whether it is free to join (membership.go).

// helloNow is this node's hello; false once the store is closing (a hello
// that comes before raft exists waits for it).
func (s *Store) helloNow() (transport.Hello, bool) {
	select {
	case <-s.started:
	case <-s.closing:
		return transport.Hello{}, false
	}
	h := transport.Hello{Node: s.cfg.NodeID, State: transport.HelloEmpty, Cluster: s.clusterID().String()}
	cfg := s.raft.GetConfiguration().Configuration()
	if len(cfg.Servers) == 0 {
		if s.join.known() {
			h.State = transport.HelloWaiting
		}
		h.Bootstrap = s.cfg.Bootstrap
		return h, true
	}
	h.State = transport.HelloRemoved
	for _, srv := range cfg.Servers {
		p := transport.HelloPeer{ID: string(srv.ID), Raft: string(srv.Address)}
		if srv.Suffrage == raft.Voter {
			h.Voters = append(h.Voters, p)
		} else {
			h.Nonvoters = append(h.Nonvoters, p)
		}
		if string(srv.ID) == s.cfg.NodeID {
			h.State = transport.HelloMember
		}
	}
	_, leader := s.raft.LeaderWithID()
	h.Leader, h.Term = string(leader), s.raft.CurrentTerm()
	if gone, err := s.fsm.RemovedNodes(); err == nil {
		for _, g := range gone {
			hg := transport.HelloGone{ID: g.ID}
			for _, fp := range g.Fingerprints {
				hg.Fingerprints = append(hg.Fingerprints, hex.EncodeToString(fp[:]))
			}
			h.Removed = append(h.Removed, hg)
		}
	}
	return h, true
}

// askHello asks node id at addr what it is. With TLS its certificate must
// name id and not be one of a removed node's.
func (s *Store) askHello(id, addr string) (transport.Hello, error) {
	return transport.AskHello(s.peer(id, addr, s.cfg.DialTimeout))
}
