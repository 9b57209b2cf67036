//go:build mutants

package resp

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// TestNoReadBarrierIsCaught: with the planted bug (reads without the
// barrier), the leader-kill history fails within a few runs: the history
// test has the power to see stale reads.
func TestNoReadBarrierIsCaught(t *testing.T) {
	mutantNoReadBarrier = true
	defer func() { mutantNoReadBarrier = false }()
	for run := 1; run <= 5; run++ {
		if res, path := leaderKillHistory(t); res != porcupine.Ok {
			t.Logf("caught in run %d: %v (%s)", run, res, path)
			return
		}
	}
	t.Fatal("the planted bug (reads without a barrier) was not caught in 5 histories")
}
