//go:build mutants

package resp

import (
	"testing"
	"time"

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
// Its followers run their scripts themselves: the leader running every
// writing script in turn hides the race the check guards.
func TestPlantedScriptNoReadCheckIsCaught(t *testing.T) {
	fsm.PlantScriptNoReadCheck(true)
	// Reset once the histories' clusters are closed (cleanups run last
	// registered first): their nodes read the flag until then.
	t.Cleanup(func() { fsm.PlantScriptNoReadCheck(false) })
	for run := 1; run <= 3; run++ {
		if res, path := scriptLockHistory(t, false); res != porcupine.Ok {
			t.Logf("caught in run %d: %v (%s)", run, res, path)
			return
		}
	}
	t.Fatal("the planted bug (script effects applied without their read check) was not caught in 3 runs")
}

// TestCollNoReadBarrierIsCaught: with reads served without the barrier,
// the hash's or the sorted set's leader-kill history fails within a few
// runs: collModel has the power to see stale HGET, HGETALL, ZSCORE and
// ZRANGE answers.
func TestCollNoReadBarrierIsCaught(t *testing.T) {
	mutantNoReadBarrier = true
	t.Cleanup(func() { mutantNoReadBarrier = false }) // after the histories' listeners close
	for run := 1; run <= 6; run++ {
		ops := collKillHistory(t, run%2 == 0)
		if res, _ := porcupine.CheckOperationsVerbose(collModel, ops, 60*time.Second); res != porcupine.Ok {
			t.Logf("caught in run %d: %v", run, res)
			return
		}
	}
	t.Fatal("the planted bug (reads without a barrier) was not caught in 6 histories")
}

// TestPlantedUnseededDrawIsCaught: with SPOP's draw taken from each
// replica's own random source, not the entry's seed, the soak's replicas
// end with different state hashes.
func TestPlantedUnseededDrawIsCaught(t *testing.T) {
	fsm.PlantUnseededDraw(true)
	t.Cleanup(func() { fsm.PlantUnseededDraw(false) }) // after the soak's cluster closes
	err := collSoak(t, soakCmds, 15*time.Second)       // they never agree: no need to wait long
	if err == nil {
		t.Fatal("the planted bug (an unseeded SPOP) was not caught: the replicas agree")
	}
	t.Logf("caught: %v", err)
}
