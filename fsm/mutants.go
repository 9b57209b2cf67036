//go:build !mutants

package fsm

// Mutants are deliberately planted bugs: the reliability tests turn each on
// and must catch it (build with -tags mutants, see mutants_on.go). In every
// other build they are constants, false: the compiler drops each branch on
// them, so a production binary carries no test switch.
const (
	// mutantWallClockInApply decides "now" from the applying replica's
	// clock instead of the leader's stamp: replicas diverge.
	mutantWallClockInApply = false
	// mutantNoAppliedIndexSkip re-applies entries at or below the
	// persisted applied index after a restart (hashicorp/raft #523, #396).
	mutantNoAppliedIndexSkip = false
	// mutantScriptNoReadCheck applies a script's effects without checking
	// that the keys it read are as it read them: a lock two clients took
	// at once, a reply that is not true of the state.
	mutantScriptNoReadCheck = false
	// mutantUnseededDraw draws SPOP's, SRANDMEMBER's, HRANDFIELD's and
	// ZRANDMEMBER's choices from a source of the applying replica's own,
	// not from the seed in the entry: replicas pop different members.
	mutantUnseededDraw = false
)
