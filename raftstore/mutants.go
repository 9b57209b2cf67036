//go:build !mutants

package raftstore

// Mutants are deliberately planted bugs (see fsm's): constants, false, in
// every build but one with -tags mutants (mutants_on.go).
const (
	// mutantLocalReads serves "linearizable" reads from the local state
	// without the read-index recipe: a follower can answer stale.
	mutantLocalReads = false
	// mutantNewRequestIDOnRetry retries a write under a fresh request id,
	// so a retry of a write that did commit applies twice.
	mutantNewRequestIDOnRetry = false
)
