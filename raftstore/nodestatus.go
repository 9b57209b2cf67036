package raftstore

import "github.com/idemgate/idemgate/storeapi"

// Status reports the node's role, term, indexes and readiness.
func (s *Store) Status() storeapi.NodeStatus {
	_, leader := s.raft.LeaderWithID()
	role := roleName(s.raftState())
	switch {
	case s.Removed():
		role = "removed"
	case s.waiting() && role != "shutdown":
		role = "waiting"
	}
	commit, applied := s.Indexes()
	return storeapi.NodeStatus{Node: s.cfg.NodeID, Role: role, Term: s.raft.CurrentTerm(), Leader: string(leader),
		ClusterID: s.ClusterID(), LastIndex: s.raft.LastIndex(), CommitIndex: commit, AppliedIndex: applied,
		NotReady: s.NotReady()}
}
