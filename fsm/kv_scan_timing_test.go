package fsm

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// BenchmarkSetNXNewKeys measures what a new key costs the state machine:
// batches of 256 SETNX of new random 16-byte keys (raftstore's group
// commit), each batch one entry, over a file that already holds 200,000
// keys; ns/key is an op's time over its 256 keys, alloc-B/key the bytes
// of pages the commits allocated (bbolt's TxStats) per key. Run with the
// scan index
// (kv_scan.go) and without it, on the same machine, to see its cost.
//
//	go test -run XXX -bench SetNXNewKeys -benchtime 400x ./fsm
func BenchmarkSetNXNewKeys(b *testing.B) {
	f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	h := &harness{f: f, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()}
	rng := rand.New(rand.NewPCG(1, 2))
	batch := func() []command.Command {
		cs := make([]command.Command, 256)
		for i := range cs {
			k := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, rng.Uint64()), rng.Uint64())
			cs[i] = command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("lock-holder-token"), TTL: 30 * time.Second, Mode: command.SetNX}
		}
		return cs
	}
	for i := 0; i < 200000/256; i++ {
		f.Apply(h.batch(batch()...))
	}
	st := f.db.Stats()
	written := st.TxStats.GetPageAlloc()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cs := batch()
		b.StartTimer()
		f.Apply(h.batch(cs...))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*256), "ns/key")
	// The bytes of pages the commits allocated (bbolt's TxStats), per key:
	// the cost that does not depend on the machine's load.
	st = f.db.Stats()
	b.ReportMetric(float64(st.TxStats.GetPageAlloc()-written)/float64(b.N*256), "alloc-B/key")
}

// BenchmarkScanIndexBuild is what the first open of a file of an earlier
// data format costs a node: a file of 1M keys (100-byte values) of format
// 1, whose index the open builds (a file of format 2 is made one of format
// 1 in one transaction first); the keys written in order (their Created
// in key order: the index is appended to) or at random (inserted at
// random).
//
//	go test -run XXX -bench ScanIndexBuild -benchtime 1x ./fsm
func BenchmarkScanIndexBuild(b *testing.B) {
	for _, random := range []bool{false, true} {
		b.Run(fmt.Sprint("random=", random), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				l := newSizeLoad(b, 1_000_000, 20000, random)
				l.kvSets(24 * time.Hour)
				err := l.f.db.Update(func(tx *bolt.Tx) error {
					if err := tx.DeleteBucket(bucketKVScan); err != nil {
						return err
					}
					return tx.Bucket(bucketMeta).Put(keyFormat, formatNoScan)
				})
				if err != nil {
					b.Fatal(err)
				}
				l.f.Close()
				b.StartTimer()
				f, err := Open(Config{Path: l.path, NoSync: true})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				f.Close()
			}
		})
	}
}
