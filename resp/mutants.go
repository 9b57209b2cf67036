//go:build !mutants

package resp

// Mutants are deliberately planted bugs (see raftstore's): constants,
// false, in every build but one with -tags mutants (mutants_on.go).
const (
	// mutantNoReadBarrier serves reads from this node's applied state
	// without the barrier: a follower can answer stale.
	mutantNoReadBarrier = false
	// mutantTxOneByOne applies a transaction's commands as a pipeline of
	// commands of their own, not as one: others interleave with them.
	mutantTxOneByOne = false
)
