//go:build mutants

package fsm

import "testing"

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
