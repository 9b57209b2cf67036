package node

import (
	"runtime/debug"
	"testing"
)

// TestPaceCollector: a node runs the collector at CollectorPace unless the
// environment names a pace, which is left in force.
func TestPaceCollector(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	pace := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }

	t.Setenv("GOGC", "")
	if got := PaceCollector(); got != CollectorPace || pace() != CollectorPace {
		t.Fatalf("without GOGC: PaceCollector = %d, pace %d; want %d", got, pace(), CollectorPace)
	}
	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150) // what Go made of it at start
	if got := PaceCollector(); got != 150 || pace() != 150 {
		t.Fatalf("with GOGC=150: PaceCollector = %d, pace %d", got, pace())
	}
}
