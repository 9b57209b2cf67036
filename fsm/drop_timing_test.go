package fsm

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
)

// BenchmarkDropHuge: the longest apply a DEL of a collection of 10^6
// members costs a node (a set, a hash, a sorted set): the DEL's own entry,
// then each reclaiming entry (grave.go) until the graveyard is empty.
// Reported: the DEL's apply, the longest apply of all, and how many
// reclaiming entries there were.
//
//	go test -run XXX -bench DropHuge -benchtime 1x ./fsm
func BenchmarkDropHuge(b *testing.B) {
	const n = 1_000_000
	for _, kind := range []string{"set", "hash", "zset"} {
		b.Run(kind, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				h := benchHarness(b)
				for lo := 0; lo < n; lo += 1 << 15 {
					ms := fields("m", min(n, lo+1<<15))[lo:]
					var c *command.Command
					switch kind {
					case "set":
						c = command.SetAddCommand([]byte("big"), ms)
					case "hash":
						c = command.HashSetCommand([]byte("big"), pairsOf(ms), false)
					default:
						scores := make([]float64, len(ms))
						for i := range scores {
							scores[i] = float64(lo + i)
						}
						c = command.ZAddCommand([]byte("big"), scores, ms, 0)
					}
					if r := h.apply(*c); r.Code != command.CodeOK && r.Code != command.CodeCreated {
						b.Fatalf("fill at %d: code %d", lo, r.Code)
					}
				}
				b.StartTimer()
				start := time.Now()
				if r := h.apply(*command.KVDeleteCommand([]byte("big"))); r.Code != command.CodeOK {
					b.Fatalf("DEL: code %d", r.Code)
				}
				del := time.Since(start)
				longest, steps, reclaiming := del, 0, time.Duration(0)
				for ; h.f.Graves() > 0 && steps < 1<<14; steps++ {
					start := time.Now()
					h.apply(*command.NoopCommand(nil))
					longest = max(longest, time.Since(start))
					reclaiming += time.Since(start)
				}
				b.ReportMetric(float64(del.Microseconds())/1000, "del-ms")
				b.ReportMetric(float64(longest.Microseconds())/1000, "longest-apply-ms")
				b.ReportMetric(float64(steps), "reclaim-entries")
				b.Logf("%s of %d: DEL applied in %s, longest apply %s, %d reclaiming entries of %s on average", kind, n, del, longest, steps, reclaiming/time.Duration(max(steps, 1)))
			}
		})
	}
}

// dropBench applies commands to a state machine of b's.
type dropBench struct {
	b     *testing.B
	f     *FSM
	index uint64
}

func benchHarness(b *testing.B) *dropBench {
	f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return &dropBench{b: b, f: f}
}

func (h *dropBench) apply(c command.Command) *command.Result {
	h.index++
	c.Stamp = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	r, ok := h.f.Apply(&raft.Log{Index: h.index, Term: 1, Type: raft.LogCommand, Data: c.Encode(nil)}).(*command.Result)
	if !ok {
		h.b.Fatalf("Apply(%s) returned no result", c.Type)
	}
	return r
}
