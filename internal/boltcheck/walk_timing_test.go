package boltcheck

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkWalk compares the structural walk reading pages with pread (as
// it did) and through the file's memory map (as it does), on a file in the
// page cache: IDEMGATE_WALK_FILE, or one of 200,000 keys with 100-byte
// values built here. From a cold disk both wait on the same random reads:
// package readahead fills the cache first.
//
//	go test -run XXX -bench Walk -benchtime 5x ./internal/boltcheck
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
	b.Run("pread", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := (&walker{f: f, size: st.Size()}).run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("mapped", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			w := &walker{size: st.Size()}
			if err := walkMapped(w, f, w.run); err != nil {
				b.Fatal(err)
			}
		}
	})
}
