package raftstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/certs"
	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/raftstore/transport"
	"github.com/idemgate/idemgate/storeapi"
)

// Membership changes. Any node may be asked; the change is made by the
// leader. Three rules keep a change from stranding the cluster:
//
//   - a node is added only once it answers (probeNode): an unreachable
//     voter counts against the quorum from the moment it is added;
//   - a removal that would leave fewer reachable voters than a quorum of
//     the voters that remain is refused (storeapi.ErrQuorumAtRisk) unless forced;
//   - the leader is never removed in place: it hands leadership to the
//     most up-to-date voter first, and the new leader removes it.
//
// A removed node keeps running (Raft's ShutdownOnRemove is off): it does
// not campaign, reports itself removed (Removed, readyz) and can be added
// again without a restart.

// promoteMaxLag is how far (in log entries) a non-voter may be behind the
// leader's last index and still be promoted without force: a voter that
// must first catch up cannot help form a quorum.
const promoteMaxLag = 1024

// Servers lists the cluster's members as this node knows them, and this
// node too when it was removed.
func (s *Store) Servers() ([]storeapi.Server, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, mapRaftErr(err)
	}
	_, leader := s.raft.LeaderWithID()
	var out []storeapi.Server
	for _, srv := range f.Configuration().Servers {
		st := "follower"
		switch {
		case srv.ID == leader:
			st = "leader"
		case string(srv.ID) == s.cfg.NodeID:
			st = roleName(s.raftState())
		}
		out = append(out, storeapi.Server{ID: string(srv.ID), RaftAddr: string(srv.Address),
			Voter: srv.Suffrage == raft.Voter, State: st})
	}
	if removed(f.Configuration(), s.cfg.NodeID) { // what readyz says too
		out = append(out, storeapi.Server{ID: s.cfg.NodeID, RaftAddr: s.cfg.advertise(), State: "removed", Removed: true,
			Reachable: true})
	}
	return out, nil
}

// Removed reports whether this node was a member and no longer is: its
// configuration names other nodes but not it. A node waiting to be added
// for the first time has an empty configuration and is not "removed".
// It reads Raft's latest configuration (a copy, never waiting for Raft's
// loop), so /v1/cluster and readyz agree with the membership listed.
func (s *Store) Removed() bool {
	f := s.raft.GetConfiguration()
	return f.Error() == nil && removed(f.Configuration(), s.cfg.NodeID)
}

func removed(c raft.Configuration, id string) bool {
	if len(c.Servers) == 0 {
		return false
	}
	for _, srv := range c.Servers {
		if string(srv.ID) == id {
			return false
		}
	}
	return true
}

// HandOff hands leadership to the most up-to-date voter when this node
// leads, before it stops: the cluster then has a leader at once instead of
// after an election timeout. Nothing to do on a follower or a single node.
func (s *Store) HandOff(ctx context.Context) error {
	if !s.IsLeader() {
		return nil
	}
	if len(s.members.list()) < 2 {
		return nil // nobody to hand it to
	}
	s.logger.Info("handing leadership on before stopping")
	return s.waitFuture(ctx, s.raft.LeadershipTransfer())
}

// AddVoter adds (or re-addresses) a voter, or promotes a non-voter at the
// same address.
func (s *Store) AddVoter(ctx context.Context, id, raftAddr string) error {
	return s.addServer(ctx, id, raftAddr, true)
}

// AddNonvoter adds a non-voter (a learner): it receives the log but does
// not vote, so it may catch up without weighing on the quorum; Promote
// makes it a voter.
func (s *Store) AddNonvoter(ctx context.Context, id, raftAddr string) error {
	return s.addServer(ctx, id, raftAddr, false)
}

func (s *Store) addServer(ctx context.Context, id, raftAddr string, voter bool) error {
	if err := checkMemberID(id); err != nil {
		return err
	}
	if raftAddr == "" || strings.IndexByte(raftAddr, 0) >= 0 {
		return fmt.Errorf("raftstore: add server: a raft address is required")
	}
	opt := ""
	if !voter {
		opt = "nonvoter"
	}
	return s.membership(ctx, transport.AddVoter, memberReq(id, raftAddr, opt))
}

// Promote makes non-voter id a voter. Without force it must be reachable
// and caught up to within promoteMaxLag entries of the leader.
func (s *Store) Promote(ctx context.Context, id string, force bool) error {
	if err := checkMemberID(id); err != nil {
		return err
	}
	return s.membership(ctx, transport.Promote, memberReq(id, forceOpt(force)))
}

// RemoveServer removes a member. Without force a removal that would leave
// fewer reachable voters than a quorum is refused (storeapi.ErrQuorumAtRisk).
// Removing the leader hands leadership on first.
func (s *Store) RemoveServer(ctx context.Context, id string, force bool) error {
	if err := checkMemberID(id); err != nil {
		return err
	}
	return s.membership(ctx, transport.Remove, memberReq(id, forceOpt(force)))
}

func checkMemberID(id string) error {
	if id == "" || strings.IndexByte(id, 0) >= 0 {
		return fmt.Errorf("raftstore: membership: a node id is required")
	}
	return nil
}

func forceOpt(force bool) string {
	if force {
		return "force"
	}
	return ""
}

// memberReq is a membership request's payload: its fields joined by NUL
// (id first; empty trailing fields are left out).
func memberReq(fields ...string) []byte {
	for len(fields) > 1 && fields[len(fields)-1] == "" {
		fields = fields[:len(fields)-1]
	}
	return []byte(strings.Join(fields, "\x00"))
}

func (s *Store) membership(ctx context.Context, kind transport.Kind, payload []byte) error {
	_, err := leaderCall(s, ctx, kind,
		func() []byte { return payload },
		func(p []byte) (struct{}, error) { return struct{}{}, s.changeMembershipLocal(ctx, kind, p) },
		func([]byte) (struct{}, error) { return struct{}{}, nil })
	return err
}

// probeNode checks, before node id becomes a member, that it answers at
// addr (with PeerTLS: with a certificate naming id, not one this cluster
// removed), and that it is free to join: it holds no configuration of
// another cluster. A voter that cannot be reached counts against the quorum
// from the moment it is added: a few added at once, by mistake or by
// whoever holds a member's key, would leave the cluster without a
// majority, for good. A member at that address already is not probed
// (re-adding it changes nothing).
func (s *Store) probeNode(ctx context.Context, cfg raft.Configuration, id, addr string) error {
	for _, srv := range cfg.Servers {
		if string(srv.ID) == id && string(srv.Address) == addr {
			return nil
		}
	}
	h, err := s.askHello(id, addr)
	if err != nil {
		var pe *certs.PeerError
		if errors.As(err, &pe) && pe.Reason == "removed_certificate" {
			return fmt.Errorf("%w: node %q at %s presents the certificate it had when it was removed: "+
				"issue it a new one (idemgate certs --config FILE --node %s) before adding it again", storeapi.ErrMembership, id, addr, id)
		}
		return fmt.Errorf("%w: node %q at %s did not answer (start it before adding it): %v", storeapi.ErrUnreachableNode, id, addr, err)
	}
	// A node holding another cluster's state (its id differs from ours)
	// would bring that cluster's history along. Ids not yet given cannot
	// tell: the first leader gives one within a moment.
	if theirs, mine := h.ClusterID(), s.clusterID(); !theirs.IsZero() && !mine.IsZero() && theirs != mine {
		what := "holds the data of"
		if h.State == transport.HelloWaiting {
			what = "waits to join"
		}
		return fmt.Errorf("%w: node %q at %s %s another cluster (id %s): "+
			"stop it and empty its data directory before adding it", storeapi.ErrMembership, id, addr, what, theirs)
	}
	return nil
}

func (s *Store) changeMembershipLocal(ctx context.Context, kind transport.Kind, payload []byte) error {
	if s.raft.State() != raft.Leader {
		return storeapi.ErrNotLeader
	}
	fields := strings.Split(string(payload), "\x00")
	id := fields[0]
	opt := func(name string) bool {
		for _, f := range fields[1:] {
			if f == name {
				return true
			}
		}
		return false
	}
	if id == "" {
		return fmt.Errorf("%w: malformed membership request", storeapi.ErrMembership)
	}
	f := s.raft.GetConfiguration()
	if err := s.waitFuture(ctx, f); err != nil {
		return err
	}
	cfg := f.Configuration()
	var cur *raft.Server
	for i := range cfg.Servers {
		if string(cfg.Servers[i].ID) == id {
			cur = &cfg.Servers[i]
		}
	}
	switch kind {
	case transport.AddVoter:
		if len(fields) < 2 || fields[1] == "" {
			return fmt.Errorf("%w: malformed add request", storeapi.ErrMembership)
		}
		addr := fields[1]
		if err := s.probeNode(ctx, cfg, id, addr); err != nil {
			return err
		}
		if opt("nonvoter") {
			if cur != nil && cur.Suffrage == raft.Voter {
				return fmt.Errorf("%w: %q is a voter; remove it first to make it a non-voter", storeapi.ErrMembership, id)
			}
			s.logger.Info("adding a non-voter", "member", id, "raft", addr)
			return s.waitFuture(ctx, s.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, s.cfg.ApplyTimeout))
		}
		s.logger.Info("adding a voter", "member", id, "raft", addr)
		return s.waitFuture(ctx, s.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, s.cfg.ApplyTimeout))
	case transport.Promote:
		if cur == nil {
			return fmt.Errorf("%w: %q", storeapi.ErrUnknownNode, id)
		}
		if cur.Suffrage == raft.Voter {
			return nil // already one: promoting again changes nothing
		}
		if !opt("force") {
			if err := s.caughtUp(id); err != nil {
				return err
			}
		}
		s.logger.Info("promoting a non-voter", "member", id)
		return s.waitFuture(ctx, s.raft.AddVoter(cur.ID, cur.Address, 0, s.cfg.ApplyTimeout))
	case transport.Remove:
		if cur == nil {
			return fmt.Errorf("%w: %q", storeapi.ErrUnknownNode, id)
		}
		force := opt("force")
		if cur.Suffrage == raft.Voter {
			voters, reachable, down := s.peers.reachableVoters(ctx, cfg, cur.ID)
			if voters == 0 {
				return fmt.Errorf("%w: %q is the last voter", storeapi.ErrMembership, id)
			}
			if quorum := voters/2 + 1; reachable < quorum && !force {
				return fmt.Errorf("%w: removing %q would leave %d voters, %d of them reachable (down: %s); "+
					"a quorum needs %d: bring a node back or add one first, or force the removal",
					storeapi.ErrQuorumAtRisk, id, voters, reachable, strings.Join(down, ", "), quorum)
			}
		}
		if id == s.cfg.NodeID && cur.Suffrage == raft.Voter {
			// The new leader removes this node: the retry is forwarded to it.
			s.logger.Info("handing leadership on before removing this node", "member", id)
			if err := s.waitFuture(ctx, s.raft.LeadershipTransfer()); err != nil && !force {
				return fmt.Errorf("%w: could not hand leadership on before removing the leader: %v", storeapi.ErrMembership, err)
			} else if err == nil {
				return fmt.Errorf("%w: leadership handed on; the new leader removes %q", errRetry, id)
			}
		}
		// The certificates it was seen with are refused from now on, by
		// every member and by every node waiting to join: recorded before
		// the removal, so no moment passes in which it is out of the
		// configuration but its certificate still opens doors.
		fps := s.members.seenCerts(id)
		if res, err := s.Apply(ctx, command.MemberRemovedCommand(id, fps)); err != nil {
			return err
		} else if err := res.Err(); err != nil {
			return err
		}
		s.logger.Info("removing a member", "member", id, "forced", force, "certificates_refused", len(fps))
		return s.waitFuture(ctx, s.raft.RemoveServer(cur.ID, 0, s.cfg.ApplyTimeout))
	}
	return fmt.Errorf("%w: unknown membership change %q", storeapi.ErrMembership, kind)
}

// caughtUp checks that member id answers this leader's probes and is within
// promoteMaxLag entries of its log.
func (s *Store) caughtUp(id string) error {
	ps, ok := s.peers.peer(id)
	if !ok || !ps.Reachable {
		return fmt.Errorf("%w: %q does not answer this leader; it cannot be promoted yet", storeapi.ErrNotCaughtUp, id)
	}
	last := s.raft.LastIndex()
	if ps.MatchIndex+promoteMaxLag < last {
		return fmt.Errorf("%w: %q is %d entries behind the leader (at most %d to be promoted); try again once it caught up",
			storeapi.ErrNotCaughtUp, id, last-ps.MatchIndex, promoteMaxLag)
	}
	return nil
}
