package fsm

import (
	"bytes"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// BenchmarkApplyAtScale is the state machine's share of a write as the
// group grows (the scale scenario's throughput row): a state machine
// holding N keys (100-byte values, a 24h lifetime, loaded in key order as
// the bulk path does), then fresh SETNX commands with the same lifetime
// applied in entries of 32 (the group commit's batch at 64 clients), each
// with a proposer's request id, as a node applies them. It reports the
// time, CPU time and allocations per command, the page faults per command (minor:
// a page of the mapped file touched for the first time; major: read from
// disk), the KV bucket's depth and the file's size. N runs over 10k, 100k
// and 1M, and up to IDEMGATE_SCALE_KEYS (e.g. 10000000) when set higher.
//
//	go test -run XXX -bench ApplyAtScale -benchtime 60000x ./fsm
func BenchmarkApplyAtScale(b *testing.B) {
	sizes := []int{10_000, 100_000, 1_000_000}
	if max := envInt("IDEMGATE_SCALE_KEYS", 0); max > sizes[len(sizes)-1] {
		sizes = append(sizes, max)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			l := newSizeLoad(b, n, 20000, false)
			l.kvSets(24 * time.Hour)
			value := bytes.Repeat([]byte{'w'}, 100)
			const perEntry = 32
			cmds := make([][]byte, 0, perEntry)
			var before, after syscall.Rusage
			var ms0, ms1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms0)
			syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmds = append(cmds, l.command(&command.Command{Type: command.TypeKVSet, Mode: command.SetNX, Key: []byte(fmt.Sprintf("new-%010d", i)), Value: value, TTL: 24 * time.Hour}))
				if len(cmds) == perEntry || i == b.N-1 {
					l.check(l.apply(cmds), command.CodeCreated)
					cmds = cmds[:0]
				}
			}
			b.StopTimer()
			syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			runtime.ReadMemStats(&ms1)
			per := func(v int64) float64 { return float64(v) / float64(b.N) }
			cpu := func(r syscall.Rusage) int64 { return r.Utime.Nano() + r.Stime.Nano() }
			// CPU time, less swayed than the wall clock by other work on
			// the machine (the garbage collector's included).
			b.ReportMetric(per(cpu(after)-cpu(before)), "cpu-ns/cmd")
			b.ReportMetric(per(int64(ms1.Mallocs-ms0.Mallocs)), "allocs/cmd")
			b.ReportMetric(per(after.Minflt-before.Minflt), "minflt/cmd")
			b.ReportMetric(per(after.Majflt-before.Majflt), "majflt/cmd")
			err := l.f.db.View(func(tx *bolt.Tx) error {
				b.ReportMetric(float64(tx.Bucket([]byte("kv")).Stats().Depth), "kv-depth")
				b.ReportMetric(float64(tx.Size())/(1<<20), "file-MB")
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkExpireDueAtScale is the state machine's share of the scale
// scenario's mass expiry: a state machine holding N keys (100-byte values,
// loaded in key order as the bulk path does), every one due at once, and
// then the sweeper's expire commands of 256 due entries each, one to an
// entry, as a node applies them. ns/key is an op's time over its 256 keys,
// alloc-B/key the bytes of pages the commits allocated per key (bbolt's
// TxStats). N runs over 10k and 1M, and IDEMGATE_SCALE_KEYS when set
// higher; an op past the due keys fails (-benchtime at most N/256 x).
//
//	go test -run XXX -bench ExpireDueAtScale -benchtime 30x ./fsm
func BenchmarkExpireDueAtScale(b *testing.B) {
	sizes := []int{10_000, 1_000_000}
	if max := envInt("IDEMGATE_SCALE_KEYS", 0); max > sizes[len(sizes)-1] {
		sizes = append(sizes, max)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			if b.N*sizeBatch > n {
				b.Skipf("%d ops of %d keys: more than the %d due", b.N, sizeBatch, n)
			}
			l := newSizeLoad(b, n, 20000, false)
			l.kvSets(time.Hour)
			l.clock += int64(2 * time.Hour)
			st := l.f.db.Stats()
			written := st.TxStats.GetPageAlloc()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				due, err := l.f.Due(time.Unix(0, l.clock), sizeBatch)
				if err != nil || len(due) != sizeBatch {
					b.Fatalf("%d due entries (%v), want %d", len(due), err, sizeBatch)
				}
				l.check(l.apply([][]byte{l.command(command.ExpireCommand(due))}), command.CodeOK)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*sizeBatch), "ns/key")
			st = l.f.db.Stats()
			b.ReportMetric(float64(st.TxStats.GetPageAlloc()-written)/float64(b.N*sizeBatch), "alloc-B/key")
			if got := l.f.ExpiredCount(ttl.KindKV); got != int64(b.N*sizeBatch) {
				b.Fatalf("%d keys expired, want %d", got, b.N*sizeBatch)
			}
		})
	}
}
