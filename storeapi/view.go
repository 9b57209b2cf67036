package storeapi

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

// ClusterView is the membership as one node sees it: its configuration,
// its probes of each member and its last log index, all of that node
// (View), never one node's figures beside another's.
type ClusterView struct {
	// View is the node whose view this is: the leader's when it answered,
	// else the node asked.
	View string
	// LastIndex is the viewing node's last log index.
	LastIndex uint64
	// Servers are the viewing node's members, each with what its probes
	// found (reachability, last contact, match index and lag).
	Servers []Server
}

// Server is one member of the Raft configuration, with what the viewing
// node knows of it (a cluster view fills the probe fields; a plain list of
// members leaves them). It is the member of GET /v1/cluster too, its
// fields in that answer's order; the Go client keeps its own (it imports
// nothing of the server).
type Server struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft"`
	// API is the member's API address: the API face fills it in its
	// answers, from the cluster file or what the member was added with;
	// the store leaves it empty.
	API string `json:"api"`
	// State: the member's Raft state as it reported it ("leader",
	// "follower", "candidate", "removed"), or "unreachable".
	State string `json:"state"`
	Voter bool   `json:"voter"`

	Reachable     bool   `json:"reachable"`
	LastContactMS int64  `json:"last_contact_ms"`
	MatchIndex    uint64 `json:"match_index"`
	Lag           uint64 `json:"lag"` // behind the viewing node's log at that answer
	// Removed is set on the entry of this node when it was removed.
	Removed bool `json:"removed,omitempty"`
}
