package raftstore

import (
	"bytes"
	"context"
	"fmt"

	"github.com/hashicorp/raft"
)

// Server is one member of the Raft configuration.
type Server struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft"`
	Voter    bool   `json:"voter"`
	// State is this node's view: "leader" for the leader it knows,
	// its own Raft state for itself, "follower" otherwise.
	State string `json:"state"`
}

// Servers lists the cluster's members as this node knows them.
func (s *Store) Servers() ([]Server, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, mapRaftErr(err)
	}
	_, leader := s.raft.LeaderWithID()
	var out []Server
	for _, srv := range f.Configuration().Servers {
		st := "follower"
		switch {
		case srv.ID == leader:
			st = "leader"
		case string(srv.ID) == s.cfg.NodeID:
			st = roleName(s.raft.State())
		}
		out = append(out, Server{ID: string(srv.ID), RaftAddr: string(srv.Address),
			Voter: srv.Suffrage == raft.Voter, State: st})
	}
	return out, nil
}

// AddVoter adds (or re-addresses) a voter; any node may be asked.
func (s *Store) AddVoter(ctx context.Context, id, raftAddr string) error {
	if id == "" || raftAddr == "" || bytes.IndexByte([]byte(id), 0) >= 0 {
		return fmt.Errorf("raftstore: add voter: id and raft address are required")
	}
	payload := append(append([]byte(id), 0), raftAddr...)
	return s.membership(ctx, fwdAddVoter, payload)
}

// RemoveServer removes a member; any node may be asked.
func (s *Store) RemoveServer(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("raftstore: remove server: id is required")
	}
	return s.membership(ctx, fwdRemove, []byte(id))
}

func (s *Store) membership(ctx context.Context, kind byte, payload []byte) error {
	_, err := leaderCall(s, ctx, kind,
		func() []byte { return payload },
		func(p []byte) (struct{}, error) { return struct{}{}, s.changeMembershipLocal(ctx, kind, p) },
		func([]byte) (struct{}, error) { return struct{}{}, nil })
	return err
}

// probeNode checks, before node id becomes a voter, that it answers at
// addr, and with PeerTLS that its certificate names id. A voter that cannot
// be reached counts against the quorum from the moment it is added: a few
// added at once, by mistake or by whoever holds a member's key, would leave
// the cluster without a majority, for good. A member at that address
// already is not probed (re-adding it changes nothing).
func (s *Store) probeNode(ctx context.Context, id, addr string) error {
	f := s.raft.GetConfiguration()
	if err := s.waitFuture(ctx, f); err != nil {
		return err
	}
	for _, srv := range f.Configuration().Servers {
		if string(srv.ID) == id && string(srv.Address) == addr {
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*s.cfg.DialTimeout)
	defer cancel()
	c, err := dialForward(s.dialAddr(id, addr), s.cfg.DialTimeout, s.peerClientTLS(id), s.maxFrame())
	if err == nil {
		defer c.close()
		_, err = c.call(ctx, fwdClock, nil)
	}
	if err != nil {
		return fmt.Errorf("%w: node %q at %s did not answer (start it before adding it): %v", ErrUnreachableNode, id, addr, err)
	}
	return nil
}

func (s *Store) changeMembershipLocal(ctx context.Context, kind byte, payload []byte) error {
	if s.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	switch kind {
	case fwdAddVoter:
		i := bytes.IndexByte(payload, 0)
		if i <= 0 {
			return fmt.Errorf("raftstore: malformed add-voter request")
		}
		id, addr := string(payload[:i]), string(payload[i+1:])
		if err := s.probeNode(ctx, id, addr); err != nil {
			return err
		}
		return s.waitFuture(ctx, s.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, s.cfg.ApplyTimeout))
	case fwdRemove:
		id := raft.ServerID(payload)
		f := s.raft.GetConfiguration()
		if err := f.Error(); err != nil {
			return mapRaftErr(err)
		}
		found := false
		for _, srv := range f.Configuration().Servers {
			found = found || srv.ID == id
		}
		if !found {
			return fmt.Errorf("%w: %q", ErrUnknownNode, string(id))
		}
		return s.waitFuture(ctx, s.raft.RemoveServer(id, 0, s.cfg.ApplyTimeout))
	}
	return fmt.Errorf("raftstore: unknown membership change %q", kind)
}
