package fsm

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// BenchmarkRememberedWrites is what the request-id memory costs a write
// that changed state: batches of 32 SETNX of new keys (in key order, so
// the keyspace's own writes append and the memory's show), over a memory
// that already holds 200,000 ids of the current generation, for each kind
// of id (idSource: "none" is the floor, nothing remembered; "timed" the
// ids nodes make now; "one" and "three" one and three proposers of the
// build before; "hashed" the HTTP API's). cpu-ns/op is the process's CPU
// per command; page-B/op the bytes of pages the commits allocated
// (bbolt's TxStats) and leaf-B/id the memory's leaf bytes per id, which
// the machine's load does not change.
//
//	go test -run XXX -bench RememberedWrites -benchtime 20000x -benchmem ./fsm
func BenchmarkRememberedWrites(b *testing.B) {
	for _, ids := range []string{"none", "one", "three", "timed", "hashed"} {
		b.Run(ids, func(b *testing.B) {
			f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			h := &harness{f: f, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()}
			src := newIDSource(ids)
			const batch = 32
			var n int
			apply := func() {
				cs := make([]command.Command, batch)
				for i := range cs {
					n++
					cs[i] = command.Command{Type: command.TypeKVSet, Key: fmt.Appendf(nil, "k:%012d", n), Value: []byte("owner-token-1234"),
						TTL: time.Minute, Mode: command.SetNX, ReqID: src.next(h.clock)}
				}
				h.clock += int64(batch * 50 * time.Microsecond)
				for i, r := range f.Apply(h.batch(cs...)).(Results) {
					if r.Code != command.CodeCreated {
						b.Fatalf("command %d: %+v", i, r)
					}
				}
			}
			for range 200000 / batch {
				apply()
			}
			st := f.db.Stats()
			written := st.TxStats.GetPageAlloc()
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for k := 0; k < b.N; k += batch {
				apply()
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			st = f.db.Stats()
			b.ReportMetric(float64(st.TxStats.GetPageAlloc()-written)/float64(b.N), "page-B/op")
			if ids != "none" {
				b.ReportMetric(memoryLeafBytes(b, f), "leaf-B/id")
			}
		})
	}
}

// memoryLeafBytes is the bytes of leaf pages the request-id memory's
// generations take per id they hold: how full the writes left them.
func memoryLeafBytes(tb testing.TB, f *FSM) float64 {
	var leaf, keys int
	err := f.db.View(func(tx *bolt.Tx) error {
		gens := tx.Bucket(bucketReqIDs)
		return gens.ForEach(func(k, v []byte) error {
			if v == nil {
				st := gens.Bucket(k).Stats()
				leaf, keys = leaf+st.LeafAlloc, keys+st.KeyN
			}
			return nil
		})
	})
	if err != nil || keys == 0 {
		tb.Fatalf("request-id memory: %d ids, %v", keys, err)
	}
	return float64(leaf) / float64(keys)
}
