//go:build mutants

package fsm

import (
	"testing"

	"github.com/idemgate/idemgate/command"
)

// TestPlantedNoAppliedIndexSkipIsCaught: with the planted bug on, entries
// replayed after a restart are applied again (they carry no request ids, so
// dedup cannot mask it).
func TestPlantedNoAppliedIndexSkipIsCaught(t *testing.T) {
	mutantNoAppliedIndexSkip = true
	defer func() { mutantNoAppliedIndexSkip = false }()
	if _, out := restartAndReplay(t); out[0] == nil || out[1] == nil {
		t.Fatalf("the planted bug went unnoticed: replayed entries were not applied again (%v)", out)
	}
}

// TestPlantedScriptNoReadCheckIsCaught: with the planted bug on, a
// script's effects apply over a write to a key it read, which
// TestScriptEffectsConflict refuses.
func TestPlantedScriptNoReadCheckIsCaught(t *testing.T) {
	mutantScriptNoReadCheck = true
	defer func() { mutantScriptNoReadCheck = false }()
	if code, v := effectsAfterConflict(t); code == command.CodeConflict && v == "10" {
		t.Fatal("the planted bug went unnoticed: effects over a changed read were refused")
	}
}
