package fsm

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/idemgate/idemgate/command"
)

// BenchmarkOncePairApply is the state machine's cost of one once pair, a
// begin then its complete, each under a request id of its own, in batches
// of 32 begins and 32 completes (the pairs of 32 clients, as the proposer
// coalesces them): "http" has the ids the HTTP API derives from a
// caller's Idempotency-Key (a SHA-256: anywhere in the memory's index),
// "store" the ids the store makes (a prefix and a sequence: in order).
// Not a timed test: the figures go in the commit that changes the path.
func BenchmarkOncePairApply(b *testing.B) {
	for _, ids := range []string{"http", "store"} {
		b.Run(ids, func(b *testing.B) {
			f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			stamp := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
			fp := command.OnceFingerprint([]byte(`{"to":"+4912345","text":"welcome"}`))
			var index, seq uint64
			id := func() command.ReqID {
				seq++
				var r command.ReqID
				if ids == "http" {
					h := sha256.Sum256(binary.BigEndian.AppendUint64(nil, seq))
					copy(r[:], h[:])
					return r
				}
				copy(r[:8], "proposer")
				binary.BigEndian.PutUint64(r[8:], seq)
				return r
			}
			apply := func(cs []*command.Command) []interface{} {
				logs := make([]*raft.Log, len(cs))
				for i, c := range cs {
					index++
					stamp += int64(50 * time.Microsecond)
					c.Stamp, c.ReqID = stamp, id()
					logs[i] = &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: c.Encode(nil)}
				}
				return f.ApplyBatch(logs)
			}
			const clients = 32
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for n := 0; n < b.N; n += clients {
				keys := make([][]byte, clients)
				begins := make([]*command.Command, clients)
				for c := range begins {
					keys[c] = command.OnceKey("bench", fmt.Sprintf("o-%d-%d", c, n))
					begins[c] = command.OnceBeginCommand(keys[c], fp, 30*time.Second, time.Hour)
				}
				out := apply(begins)
				completes := make([]*command.Command, clients)
				for c := range completes {
					r := out[c].(*command.Result)
					if r.Code != command.CodeCreated {
						b.Fatalf("begin: %+v", r)
					}
					completes[c] = command.OnceCompleteCommand(keys[c], r.Fence, []byte(fmt.Sprintf("sms-%d-%d", c, n)), time.Hour)
				}
				for c, r := range apply(completes) {
					if r.(*command.Result).Code != command.CodeOK {
						b.Fatalf("complete %d: %+v", c, r)
					}
				}
			}
			// The process's CPU (user and system: bbolt's writes), which a
			// loaded machine does not inflate as it does the wall time.
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the process's user and system CPU so far, in nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
