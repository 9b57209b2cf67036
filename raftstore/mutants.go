package raftstore

// Mutants are deliberately planted bugs, for tests only (see fsm.Mutants).
var Mutants struct {
	// LocalReads serves "linearizable" reads from the local state without
	// the read-index recipe: a follower can answer stale.
	LocalReads bool
	// NewRequestIDOnRetry retries a write under a fresh request id, so a
	// retry of a write that did commit applies twice.
	NewRequestIDOnRetry bool
}
