package fsm

// Mutants are deliberately planted bugs, for tests only: the reliability
// suite (RELIABILITY.md, "detection power") turns each on and must catch
// it. All are off in every build; nothing but a test sets them.
var Mutants struct {
	// WallClockInApply decides "now" from the applying replica's clock
	// instead of the leader's stamp: replicas diverge.
	WallClockInApply bool
	// NoAppliedIndexSkip re-applies entries at or below the persisted
	// applied index after a restart (hashicorp/raft #523, #396).
	NoAppliedIndexSkip bool
}
