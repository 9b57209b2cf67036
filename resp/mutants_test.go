//go:build mutants

package resp

import (
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/idemgate/idemgate/fsm"
)

// TestNoReadBarrierIsCaught: with the planted bug (reads without the
// barrier), the leader-kill history fails within a few runs: the history
// test has the power to see stale reads.
func TestNoReadBarrierIsCaught(t *testing.T) {
	mutantNoReadBarrier = true
	t.Cleanup(func() { mutantNoReadBarrier = false }) // after the histories' listeners close
	for run := 1; run <= 5; run++ {
		if res, path := leaderKillHistory(t); res != porcupine.Ok {
			t.Logf("caught in run %d: %v (%s)", run, res, path)
			return
		}
	}
	t.Fatal("the planted bug (reads without a barrier) was not caught in 5 histories")
}

// TestPlantedTxOneByOneIsCaught: with the planted bug (a transaction's
// commands applied one by one), the atomicity test sees a half-applied
// transaction within a few runs.
func TestPlantedTxOneByOneIsCaught(t *testing.T) {
	mutantTxOneByOne = true
	t.Cleanup(func() { mutantTxOneByOne = false }) // after the histories' listeners close
	for run := 1; run <= 3; run++ {
		if problem := atomicHistory(t); problem != "" {
			t.Logf("caught in run %d: %.300s", run, problem)
			return
		}
	}
	t.Fatal("the planted bug (transactions applied one by one) was not caught in 3 runs")
}

// TestPlantedScriptNoReadCheckIsCaught: with the state machine's check of
// a script's reads planted away, the script lock's history across a
// leader kill is not linearizable within a few runs: two clients held it.
func TestPlantedScriptNoReadCheckIsCaught(t *testing.T) {
	fsm.PlantScriptNoReadCheck(true)
	// Reset once the histories' clusters are closed (cleanups run last
	// registered first): their nodes read the flag until then.
	t.Cleanup(func() { fsm.PlantScriptNoReadCheck(false) })
	for run := 1; run <= 3; run++ {
		if res, path := scriptLockHistory(t); res != porcupine.Ok {
			t.Logf("caught in run %d: %v (%s)", run, res, path)
			return
		}
	}
	t.Fatal("the planted bug (script effects applied without their read check) was not caught in 3 runs")
}
