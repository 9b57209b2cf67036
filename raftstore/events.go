package raftstore

// What an operator must see in a node's log, once, when it happens: the
// leader changing, members added, removed or changed, and the node turning
// ready or not ready (with the reason). A peer lost and found again is
// logged by the members' probes (peerstatus.go), which also feed
// idemgate_peer_reachable: one view of reachability. Repeated states are never logged again; Raft's own per-heartbeat
// errors are rate-limited by the hclog adapter (hclog.go).

import (
	"context"
	"time"

	"github.com/hashicorp/raft"
)

// eventInterval is how often readiness and membership are checked (a
// follower learns membership changes from the log, with no observation).
const eventInterval = time.Second

// newEventObserver registers the Raft observations watchEvents logs.
func (s *Store) newEventObserver() {
	s.obsCh = make(chan raft.Observation, 64)
	s.obs = raft.NewObserver(s.obsCh, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.PeerObservation:
			return true
		}
		return false
	})
	s.raft.RegisterObserver(s.obs)
}

// watchEvents logs the node's transitions, and samples its health
// (ready.go), until ctx ends.
func (s *Store) watchEvents(ctx context.Context) {
	t := time.NewTicker(eventInterval)
	defer t.Stop()
	sample := time.NewTicker(healthEvery)
	defer sample.Stop()
	s.sampleHealth(time.Now())
	members := s.memberSet()
	notReady := "no leader" // a starting node has none: not worth a line
	for {
		select {
		case <-ctx.Done():
			return
		case o := <-s.obsCh:
			switch d := o.Data.(type) {
			case raft.LeaderObservation:
				addr, _ := s.raft.LeaderWithID() // now, not as observed: the observation may be late
				s.noteLeader(addr != "", time.Now())
				s.leaderWake.wake()
				s.metrics.leaderChanges.Inc()
				s.logger.Info("leader changed", "leader", string(d.LeaderID), "leader_addr", string(d.LeaderAddr))
			case raft.PeerObservation:
				members = s.logMembers(members)
			}
		case now := <-sample.C:
			s.sampleHealth(now)
		case <-t.C:
			members = s.logMembers(members)
			notReady = s.logReadiness(notReady)
		}
	}
}

// memberSet is the latest Raft configuration, by server id.
func (s *Store) memberSet() map[raft.ServerID]raft.Server {
	out := map[raft.ServerID]raft.Server{}
	f := s.raft.GetConfiguration() // answered at once, from the latest configuration
	if f.Error() != nil {
		return nil
	}
	for _, srv := range f.Configuration().Servers {
		out[srv.ID] = srv
	}
	return out
}

// logMembers logs how the configuration differs from was, and returns it.
func (s *Store) logMembers(was map[raft.ServerID]raft.Server) map[raft.ServerID]raft.Server {
	now := s.memberSet()
	// A node's first configuration (it bootstrapped, or was added) is not
	// a membership change: awaitCluster says it once.
	if now == nil || len(was) == 0 {
		return now
	}
	for id, srv := range now {
		old, ok := was[id]
		switch {
		case !ok:
			s.logger.Info("member added", memberAttrs(srv)...)
		case old != srv:
			s.logger.Info("member changed", memberAttrs(srv)...)
		}
	}
	for id, srv := range was {
		if _, ok := now[id]; !ok {
			s.logger.Info("member removed", "member", string(id), "address", string(srv.Address))
		}
	}
	return now
}

func memberAttrs(srv raft.Server) []any {
	return []any{"member", string(srv.ID), "address", string(srv.Address), "voter", srv.Suffrage == raft.Voter}
}

// notReadyReason is "" when the node is ready, else why it is not.
func (s *Store) notReadyReason() string {
	if r := s.notReadyNow(); r != nil {
		return r.reason
	}
	return ""
}

// logReadiness logs a change of readiness (or of the reason for not being
// ready) from was, and returns the new reason ("" when ready).
func (s *Store) logReadiness(was string) string {
	now := s.notReadyReason()
	switch {
	case now == was:
	case now == "":
		s.logger.Info("ready")
	case now == "removed":
		s.logger.Warn("not ready: removed from the cluster; serving nothing until added again (POST /v1/cluster/nodes on a member) or stopped",
			"reason", now)
	default:
		s.logger.Warn("not ready", "reason", now)
	}
	return now
}
