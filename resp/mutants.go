//go:build !mutants

package resp

// Mutants are deliberately planted bugs (see raftstore's): constants,
// false, in every build but one with -tags mutants (mutants_on.go).
const (
	// mutantNoReadBarrier serves reads from this node's applied state
	// without the barrier: a follower can answer stale.
	mutantNoReadBarrier = false
)
