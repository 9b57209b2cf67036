//go:build mutants

package fsm

// The planted bugs (see mutants.go), settable in this build only.
var (
	mutantWallClockInApply   bool
	mutantNoAppliedIndexSkip bool
	mutantScriptNoReadCheck  bool
	mutantUnseededDraw       bool
)

// PlantWallClockInApply turns the wall-clock planted bug on or off, for the
// tests of packages above that must catch it (raftstore's T1 histories).
// It exists only in a build with -tags mutants.
func PlantWallClockInApply(on bool) { mutantWallClockInApply = on }

// PlantScriptNoReadCheck turns the script planted bug on or off, for
// resp's lock history, which must catch it.
func PlantScriptNoReadCheck(on bool) { mutantScriptNoReadCheck = on }

// PlantUnseededDraw turns the unseeded-draw planted bug on or off, for
// resp's soak, which must catch it.
func PlantUnseededDraw(on bool) { mutantUnseededDraw = on }
