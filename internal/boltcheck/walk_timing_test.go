package boltcheck

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkWalk compares the structural walk reading pages with pread (as
// it did) and through the file's memory map filled in file order (as it
// does), on IDEMGATE_WALK_FILE or a file of 200,000 keys with 100-byte
// values built here: warm (the file in the page cache) and cold (the cache
// dropped before each walk, when the benchmark may: root on Linux).
//
//	IDEMGATE_WALK_FILE=/tmp/coldbench/10000000/fresh.db go test -run XXX -bench Walk -benchtime 3x ./internal/boltcheck
func BenchmarkWalk(b *testing.B) {
	path := os.Getenv("IDEMGATE_WALK_FILE")
	if path == "" {
		path = filepath.Join(b.TempDir(), "walk.db")
		db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		v := bytes.Repeat([]byte{'v'}, 100)
		for i := 0; i < 200000; i += 10000 {
			err := db.Update(func(tx *bolt.Tx) error {
				bk, _ := tx.CreateBucketIfNotExists([]byte("kv"))
				for j := i; j < i+10000; j++ {
					if err := bk.Put([]byte(fmt.Sprintf("key-%010d", j)), v); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		db.Close()
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	walks := []struct {
		name string
		walk func() error
	}{
		{"pread", func() error { return (&walker{f: f, size: st.Size()}).run() }},
		{"mapped", func() error {
			w := &walker{size: st.Size()}
			return walkMapped(w, f, w.run)
		}},
	}
	for _, cold := range []bool{false, true} {
		for _, wk := range walks {
			name := wk.name + "/warm"
			if cold {
				name = wk.name + "/cold"
			}
			b.Run(name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if cold {
						b.StopTimer()
						syscall.Sync()
						if os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0) != nil {
							b.Skip("cannot drop the page cache")
						}
						b.StartTimer()
					}
					if err := wk.walk(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
