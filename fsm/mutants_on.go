//go:build mutants

package fsm

// The planted bugs (see mutants.go), settable in this build only.
var (
	MutantWallClockInApply   bool
	MutantNoAppliedIndexSkip bool
)
