package raftstore

// NodeStatus is what a node says of itself: its part of an operator's
// `idemgate status`.
type NodeStatus struct {
	Node      string
	Role      string // leader, follower, candidate, removed, waiting, shutdown
	Term      uint64
	Leader    string // the leader's id, as this node knows it ("" when none)
	ClusterID string
	// LastIndex is the node's last log index; CommitIndex what it knows
	// committed; AppliedIndex what its state machine applied.
	LastIndex, CommitIndex, AppliedIndex uint64
	// NotReady says why the node cannot serve writes ("" when it can).
	NotReady string
}

// Status reports the node's role, term, indexes and readiness.
func (s *Store) Status() NodeStatus {
	_, leader := s.raft.LeaderWithID()
	role := roleName(s.raft.State())
	switch {
	case s.Removed():
		role = "removed"
	case s.waiting() && role != "shutdown":
		role = "waiting"
	}
	commit, applied := s.Indexes()
	return NodeStatus{Node: s.cfg.NodeID, Role: role, Term: s.raft.CurrentTerm(), Leader: string(leader),
		ClusterID: s.ClusterID(), LastIndex: s.raft.LastIndex(), CommitIndex: commit, AppliedIndex: applied,
		NotReady: s.NotReady()}
}
