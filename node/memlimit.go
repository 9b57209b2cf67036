package node

import (
	"context"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// DefaultMemoryLimit is the soft limit on the memory a node's Go runtime
// holds (Go's debug.SetMemoryLimit: heap, stacks and the runtime's own)
// unless the cluster file's memory_limit or the environment's GOMEMLIMIT
// says otherwise. At CollectorPace the collector lets the heap grow to
// five times the live heap before it runs: under 2 x 32,000 gateway first
// requests with 8 KiB answers a node held 550 MiB of anonymous memory,
// against 230 MiB at Go's default pace. The limit makes the collector run
// early once the heap reaches it, and return freed pages to the system, so
// a serving node stays near it (252 MiB under that load); while the heap
// is well under it the pace alone decides, and the pace's saving stays.
const DefaultMemoryLimit = 256 << 20

// A soft limit near the live heap makes the collector run again and again
// (Go caps it at about half the CPU, which is still a node starved). So
// the limit in force follows the live heap: never less than twice the live
// heap plus the runtime's memory outside the heap, which is the heap Go's
// default pace (GOGC=100) would let grow. A node whose live heap outgrows
// half its limit (a large keyspace's index, a restore) then collects as
// often as at Go's default pace, never more, and its memory follows its
// data as it did without a limit.

// memoryCheckEvery is how often the limit in force is brought to the live
// heap.
const memoryCheckEvery = time.Second

// memoryMetrics are the runtime's figures the limit follows.
var memoryMetrics = []string{
	"/gc/heap/live:bytes",         // marked live by the last cycle
	"/memory/classes/total:bytes", // everything the runtime mapped
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
}

// memoryLimit is a soft memory limit that follows the live heap.
type memoryLimit struct {
	floor  int64 // the limit asked for
	logger *slog.Logger
	warned bool // the live heap has outgrown half the limit (logged once)
	sample []metrics.Sample
}

// LimitMemory sets the process's soft memory limit to limit
// (DefaultMemoryLimit when 0), raised while the live heap needs more (see
// above), until ctx ends; it returns the limit asked for. The environment's
// GOMEMLIMIT, which Go reads itself, wins: it is left in force as it is,
// without following the heap, and LimitMemory returns it (math.MaxInt64
// for GOMEMLIMIT=off).
func LimitMemory(ctx context.Context, limit int64, logger *slog.Logger) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1)
	}
	if limit <= 0 {
		limit = DefaultMemoryLimit
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &memoryLimit{floor: limit, logger: logger, sample: sampleFor(memoryMetrics)}
	m.adjust()
	go func() {
		tick := time.NewTicker(memoryCheckEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				m.adjust()
			}
		}
	}()
	return limit
}

// sampleFor is a sample of each metric named.
func sampleFor(names []string) []metrics.Sample {
	s := make([]metrics.Sample, len(names))
	for i, name := range names {
		s[i].Name = name
	}
	return s
}

// adjust sets the limit in force to the floor, or to what the live heap
// needs if that is more, and returns it.
func (m *memoryLimit) adjust() int64 {
	metrics.Read(m.sample)
	v := func(i int) int64 {
		if m.sample[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		u := m.sample[i].Value.Uint64()
		return int64(min(u, math.MaxInt64/4))
	}
	live, total := v(0), v(1)
	outside := total - v(2) - v(3) - v(4) - v(5) // stacks, the runtime's metadata and buffers
	need := 2*live + max(outside, 0)
	limit := max(m.floor, need)
	if need > m.floor && !m.warned {
		m.warned = true
		m.logger.Warn("the live heap has outgrown half of memory_limit: the limit follows it (collecting as often as GOGC=100 would); raise memory_limit to keep the slower pace",
			"live_heap_mib", live>>20, "memory_limit_mib", m.floor>>20)
	}
	debug.SetMemoryLimit(limit)
	return limit
}
