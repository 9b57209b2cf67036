//go:build mutants

package raftstore

// The planted bugs, each caught: run with go test -tags mutants.

import (
	"testing"
	"time"

	"github.com/idemgate/idemgate/fsm"
)

// TestForwardedRetryWithoutRequestIDIsCaught: the planted bug (a retry under
// a fresh request id) makes the same run fail.
func TestForwardedRetryWithoutRequestIDIsCaught(t *testing.T) {
	mutantNewRequestIDOnRetry = true
	defer func() { mutantNewRequestIDOnRetry = false }()
	err := forwardedRetries(t)
	if err == nil {
		t.Fatal("the planted bug (retry without its request id) was not caught")
	}
	t.Logf("caught: %v", err)
}

// TestT1CatchesPlantedBugs proves the suite's power: with a planted bug
// on, a T1 history fails (a porcupine violation or replicas that never
// converge); with them off, TestT1Histories passes.
func TestT1CatchesPlantedBugs(t *testing.T) {
	if testing.Short() {
		t.Skip("T1: planted bugs")
	}
	byName := map[string]fault{}
	for _, f := range t1Faults {
		byName[f.name] = f
	}
	mutants := []struct {
		name   string
		set    func(on bool)
		faults []string // histories to try, in order, until one catches it
	}{
		{"follower read without the read-index recipe", func(on bool) { mutantLocalReads = on },
			[]string{"delayed links from the leader", "one-way partition to the leader"}},
		{"wall-clock read in Apply", func(on bool) { fsm.PlantWallClockInApply(on) },
			[]string{"delayed links from the leader", "connections reset"}},
		// The third planted bug, no applied-index skip after a restart, is
		// masked here: every replayed entry carries a request id whose
		// result is remembered, so a replay is recalled, not re-applied.
		// The skip matters past RequestIDRetention (a node restarted long
		// after its last snapshot), which a seconds-long history cannot
		// reach; fsm.TestPlantedNoAppliedIndexSkipIsCaught catches it.
	}
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			m.set(true)
			defer m.set(false)
			for i, name := range m.faults {
				r := runT1History(t, byName[name], 3*time.Second)
				if msg := r.failed(); msg != "" {
					t.Logf("caught by history %d (%s): %s", i+1, name, msg)
					return
				}
			}
			t.Errorf("planted bug %q not caught by %d histories", m.name, len(m.faults))
		})
	}
}
