package node

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
)

// limitInForce is the process's soft memory limit.
func limitInForce() int64 { return debug.SetMemoryLimit(-1) }

// TestLimitMemory: a node sets the soft memory limit it is given, or
// DefaultMemoryLimit, unless the environment names one (GOMEMLIMIT, which
// Go reads itself), which is left in force.
func TestLimitMemory(t *testing.T) {
	orig := limitInForce()
	t.Cleanup(func() { debug.SetMemoryLimit(orig) })

	for _, tc := range []struct {
		name    string
		env     string
		atStart int64 // what Go made of the environment
		asked   int64
		want    int64
		inForce int64
	}{
		{"default", "", math.MaxInt64, 0, DefaultMemoryLimit, DefaultMemoryLimit},
		{"the file's", "", math.MaxInt64, 1 << 30, 1 << 30, 1 << 30},
		{"GOMEMLIMIT wins over the file", "300MiB", 300 << 20, 1 << 30, 300 << 20, 300 << 20},
		{"GOMEMLIMIT=off", "off", math.MaxInt64, 0, math.MaxInt64, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			t.Setenv("GOMEMLIMIT", tc.env)
			debug.SetMemoryLimit(tc.atStart)
			if got := LimitMemory(ctx, tc.asked, nil); got != tc.want || limitInForce() != tc.inForce {
				t.Fatalf("LimitMemory(%d) with GOMEMLIMIT=%q = %d, in force %d; want %d, in force %d",
					tc.asked, tc.env, got, limitInForce(), tc.want, tc.inForce)
			}
		})
	}
}

// TestMemoryLimitFollowsLiveHeap: a limit under twice the live heap would
// make the collector run again and again; the limit in force is raised to
// it, and falls back to the limit asked for when the heap is freed.
func TestMemoryLimitFollowsLiveHeap(t *testing.T) {
	orig := limitInForce()
	t.Cleanup(func() { debug.SetMemoryLimit(orig) })

	const liveBytes = 64 << 20
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, liveBytes/len(live))
		live[i][0] = 1
	}
	runtime.GC()
	m := &memoryLimit{floor: 16 << 20, logger: slog.New(slog.DiscardHandler), sample: sampleFor(memoryMetrics)}
	got := m.adjust()
	if got < 2*liveBytes || limitInForce() != got {
		t.Fatalf("live heap %d MiB, limit asked 16 MiB: in force %d MiB (adjust said %d MiB), want at least %d MiB",
			liveBytes>>20, limitInForce()>>20, got>>20, 2*liveBytes>>20)
	}
	if !m.warned {
		t.Errorf("the limit was raised without the warning")
	}
	runtime.KeepAlive(live)
	live = nil
	runtime.GC()
	m.floor = 1 << 30
	if got := m.adjust(); got != 1<<30 || limitInForce() != 1<<30 {
		t.Fatalf("live heap freed, limit asked 1 GiB: in force %d MiB, adjust said %d MiB", limitInForce()>>20, got>>20)
	}
}
