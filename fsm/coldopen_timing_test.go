package fsm

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/internal/boltcheck"
)

// BenchmarkColdOpen measures what a node's restart costs for its state
// machine's file of N keys (100-byte values; IDEMGATE_COLD_KEYS, default
// 200,000), each phase from a cold page cache when the benchmark may drop
// it (root on Linux): the page walk that guards bbolt against a damaged
// file, bbolt's open (which rebuilds the free list by reading every page:
// both files use NoFreelistSync), the same open of a copy written with
// the free list synced, and the state machine's own load. It decides
// whether to sync the free list.
//
//	IDEMGATE_COLD_KEYS=1000000 go test -run XXX -bench ColdOpen -benchtime 3x ./fsm
func BenchmarkColdOpen(b *testing.B) {
	n := 200000
	if v, err := strconv.Atoi(os.Getenv("IDEMGATE_COLD_KEYS")); err == nil && v > 0 {
		n = v
	}
	dir := b.TempDir()
	path := filepath.Join(dir, "fsm.db")
	f, err := Open(Config{Path: path, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	value := bytes.Repeat([]byte{'v'}, 100)
	const perEntry = 4096
	for i, index := 0, uint64(1); i < n; i, index = i+perEntry, index+1 {
		var cmds [][]byte
		for j := i; j < min(i+perEntry, n); j++ {
			cmds = append(cmds, (&Command{Type: TypeKVSet, Key: []byte(fmt.Sprintf("key-%010d", j)), Value: value, Stamp: 1}).Encode(nil))
		}
		f.ApplyBatch([]*raft.Log{{Index: index, Type: raft.LogCommand, Data: EncodeBatch(cmds)}})
	}
	f.Close()
	// The same data in a file whose free list is synced.
	synced := filepath.Join(dir, "synced.db")
	src, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	dst, err := bolt.Open(synced, 0o600, &bolt.Options{NoFreelistSync: false})
	if err != nil {
		b.Fatal(err)
	}
	if err := bolt.Compact(dst, src, 64<<20); err != nil {
		b.Fatal(err)
	}
	src.Close()
	dst.Close()
	st, _ := os.Stat(path)
	b.Logf("%d keys: fsm.db %d bytes", n, st.Size())

	cold := func() bool {
		return os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0) == nil
	}
	phase := func(name string, fn func() error) {
		var total time.Duration
		dropped := true
		for i := 0; i < b.N; i++ {
			dropped = cold() && dropped
			start := time.Now()
			if err := fn(); err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			total += time.Since(start)
		}
		b.ReportMetric(float64(total.Milliseconds())/float64(b.N), name+"-ms")
		if !dropped {
			b.Logf("%s: the page cache could not be dropped: warm figures", name)
		}
	}
	openClose := func(p string, noFreelistSync bool) func() error {
		return func() error {
			db, err := bolt.Open(p, 0o600, &bolt.Options{NoFreelistSync: noFreelistSync, FreelistType: bolt.FreelistMapType})
			if err != nil {
				return err
			}
			return db.Close()
		}
	}
	b.ResetTimer()
	phase("walk", func() error { return boltcheck.Check(path, false) })
	phase("bolt-open-nosync", openClose(path, true))
	phase("bolt-open-synced", openClose(synced, false))
	phase("fsm-open", func() error {
		f, err := Open(Config{Path: path, NoSync: true})
		if err != nil {
			return err
		}
		return f.Close()
	})
}
