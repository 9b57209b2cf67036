package fsm

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/boltcheck"
)

// BenchmarkColdOpen measures what a node's restart costs for its state
// machine's file of N keys (100-byte values; IDEMGATE_COLD_KEYS, default
// 200,000), from a cold page cache when the benchmark may drop it (root on
// Linux), phase by phase, on two copies of one file that differ only in
// the free list:
//
//   - clean: the file as Close leaves it, its free list written: the check
//     (which reads the file in order first), bbolt's open (reads the free
//     list), load, and Close (writes it again);
//   - unsynced: the file as every commit of a running node leaves it, no
//     free list: a clean restart before the list was written at close
//     (bbolt's open rebuilds it by walking every page);
//   - unclean: the same file after a crash in the same boot: the full check
//     (key order and bbolt's tx.Check), then the rebuild;
//   - open: the state machine's Open and Close end to end on the clean file.
//
// With IDEMGATE_COLD_EXPIRED=1 the same is measured on a copy with 9 keys in
// 10 deleted (a mass expiry): a long free list to write and read.
// IDEMGATE_COLD_DIR keeps the files between runs (built once: a minute at
// 10M keys, 3.2 GB each).
//
//	IDEMGATE_COLD_KEYS=1000000 IDEMGATE_COLD_DIR=/tmp/coldbench go test -run XXX -bench ColdOpen -benchtime 3x ./fsm
func BenchmarkColdOpen(b *testing.B) {
	n := 200000
	if v, err := strconv.Atoi(os.Getenv("IDEMGATE_COLD_KEYS")); err == nil && v > 0 {
		n = v
	}
	dir := os.Getenv("IDEMGATE_COLD_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	dir = filepath.Join(dir, strconv.Itoa(n))
	sets := []string{"fresh"}
	if os.Getenv("IDEMGATE_COLD_EXPIRED") == "1" {
		sets = append(sets, "expired")
	}
	checkPhase := func(path string, full bool) coldPhase {
		return coldPhase{"check", func(*bolt.DB) (*bolt.DB, error) {
			return nil, boltcheck.Check(path, full || fileSize(path) <= boltcheck.FullCheckMaxBytes)
		}}
	}
	openPhase := func(path string) coldPhase {
		return coldPhase{"bolt-open", func(*bolt.DB) (*bolt.DB, error) { return openDB(path, true) }}
	}
	for _, set := range sets {
		clean, unsynced := coldFiles(b, dir, n, set == "expired")
		b.Run(set+"/clean", func(b *testing.B) {
			coldPhases(b, []coldPhase{checkPhase(clean, false), openPhase(clean), {"load", loadPhase}, {"close", closePhase}})
		})
		b.Run(set+"/unsynced", func(b *testing.B) {
			coldPhases(b, []coldPhase{checkPhase(unsynced, false), openPhase(unsynced), {"load", loadPhase}})
		})
		b.Run(set+"/unclean", func(b *testing.B) {
			coldPhases(b, []coldPhase{checkPhase(unsynced, true), openPhase(unsynced), {"load", loadPhase}})
		})
		b.Run(set+"/open", func(b *testing.B) {
			coldPhases(b, []coldPhase{{"open", func(*bolt.DB) (*bolt.DB, error) {
				f, err := Open(Config{Path: clean, NoSync: true})
				if err != nil {
					return nil, err
				}
				return nil, f.Close()
			}}})
		})
	}
}

// coldPhase is one step of a cold open: it gets the database the step
// before returned (nil before bbolt's open) and returns the one after.
type coldPhase struct {
	name string
	run  func(*bolt.DB) (*bolt.DB, error)
}

func loadPhase(db *bolt.DB) (*bolt.DB, error) { return db, (&FSM{db: db}).load() }

// closePhase closes the file as FSM.Close does, its free list written.
func closePhase(db *bolt.DB) (*bolt.DB, error) {
	f := &FSM{db: db, failed: make(chan struct{})} // fsynced: no marker file
	return nil, f.Close()
}

// coldPhases runs the phases in order b.N times from a cold page cache and
// reports each phase's mean and their total, in milliseconds.
func coldPhases(b *testing.B, phases []coldPhase) {
	took := make([]time.Duration, len(phases))
	dropped := true
	for i := 0; i < b.N; i++ {
		syscall.Sync() // dirty pages stay in the cache
		dropped = os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0) == nil && dropped
		var db *bolt.DB
		for p, ph := range phases {
			start := time.Now()
			var err error
			if db, err = ph.run(db); err != nil {
				b.Fatalf("%s: %v", ph.name, err)
			}
			took[p] += time.Since(start)
		}
		if db != nil {
			db.Close()
		}
	}
	var total time.Duration
	for p, ph := range phases {
		total += took[p]
		b.ReportMetric(float64(took[p].Milliseconds())/float64(b.N), ph.name+"-ms")
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "total-ms")
	if !dropped {
		b.Logf("the page cache could not be dropped: warm figures")
	}
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// coldFiles returns two copies of one file of n keys, page for page the
// same but for the free list: clean as FSM.Close leaves it (the free list
// written), legacy as a running node, a crash or an older build leaves it
// (none). expired
// deletes 9 keys in 10 from a copy first. Files found in dir are reused.
func coldFiles(b *testing.B, dir string, n int, expired bool) (clean, legacy string) {
	name := "fresh"
	if expired {
		name = "expired"
	}
	clean, legacy = filepath.Join(dir, name+".db"), filepath.Join(dir, name+"-legacy.db")
	if fileSize(clean) > 0 && fileSize(legacy) > 0 {
		b.Logf("%d keys, %s: reusing %s (%d bytes)", n, name, clean, fileSize(clean))
		return clean, legacy
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh.db")
	if expired {
		fresh, _ = coldFiles(b, dir, n, false)
	} else {
		f, err := Open(Config{Path: fresh, NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		value := bytes.Repeat([]byte{'v'}, 100)
		const perEntry = 4096
		for i, index := 0, uint64(1); i < n; i, index = i+perEntry, index+1 {
			var cmds [][]byte
			for j := i; j < min(i+perEntry, n); j++ {
				cmds = append(cmds, (&command.Command{Type: command.TypeKVSet, Key: []byte(fmt.Sprintf("key-%010d", j)), Value: value, Stamp: 1}).Encode(nil))
			}
			f.ApplyBatch([]*raft.Log{{Index: index, Type: raft.LogCommand, Data: EncodeBatch(cmds)}})
		}
		if err := f.Close(); err != nil { // leaves the clean marker Open wants
			b.Fatal(err)
		}
	}
	copyFile(b, fresh, legacy)
	db, err := bolt.Open(legacy, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	if expired {
		for i := 0; i < n; i += 100000 {
			err = db.Update(func(tx *bolt.Tx) error {
				kv := tx.Bucket(bucketKV)
				for j := i; j < min(i+100000, n); j++ {
					if j%10 != 0 {
						if err := kv.Delete([]byte(fmt.Sprintf("key-%010d", j))); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	// A commit without the free list marks it unsynced, as every commit
	// of a running node does.
	if err := db.Update(func(tx *bolt.Tx) error { return nil }); err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	if expired {
		copyFile(b, legacy, clean)
		db, err := openDB(clean, true)
		if err == nil {
			_, err = closePhase(db)
		}
		if err == nil {
			err = writeFileSync(clean+cleanSuffix, strings.NewReader("closed cleanly\n"))
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d keys, %s: %s (%d bytes)", n, name, clean, fileSize(clean))
	return clean, legacy
}

func copyFile(b *testing.B, from, to string) {
	in, err := os.Open(from)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkFreelistSyncCommits is the other half of the free-list decision:
// what syncing the free list costs every commit, on a file where most pages
// are free (90% of 300,000 keys deleted, as after a mass expiry), with and
// without fsync. Two runs on the shared 2-core machine: syncing the free
// list cost 0-34% of the commits per second without fsync and 11-20% with
// it (547 vs 614/s, 534 vs 667/s), paid at every commit. So both files keep
// NoFreelistSync while they are open, as etcd does, and fsm.db's Close
// writes the list once (1-3 ms), which spares the next open its rebuild
// (BenchmarkColdOpen, 10M keys cold: 1.6 s clean against 2.7 s unsynced).
// raft.db is closed without it: BenchmarkLogStoreColdOpen found nothing to
// save.
//
//	go test -run XXX -bench FreelistSyncCommits -benchtime 2000x ./fsm
func BenchmarkFreelistSyncCommits(b *testing.B) {
	for _, fsync := range []bool{false, true} {
		for _, freelistSync := range []bool{false, true} {
			b.Run(fmt.Sprintf("fsync=%v/freelist-sync=%v", fsync, freelistSync), func(b *testing.B) {
				db, err := bolt.Open(filepath.Join(b.TempDir(), "f.db"), 0o600,
					&bolt.Options{NoFreelistSync: !freelistSync, FreelistType: bolt.FreelistMapType, NoSync: true})
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				const keys = 300000
				v := bytes.Repeat([]byte{'v'}, 100)
				key := func(i int) []byte { return []byte(fmt.Sprintf("key-%010d", i)) }
				for _, keep := range []bool{true, false} { // fill, then delete 9 in 10
					for i := 0; i < keys; i += 10000 {
						db.Update(func(tx *bolt.Tx) error {
							bk, _ := tx.CreateBucketIfNotExists([]byte("kv"))
							for j := i; j < i+10000; j++ {
								if keep {
									bk.Put(key(j), v)
								} else if j%10 != 0 {
									bk.Delete(key(j))
								}
							}
							return nil
						})
					}
				}
				db.NoSync = !fsync
				b.ResetTimer()
				for c := 0; c < b.N; c++ {
					db.Update(func(tx *bolt.Tx) error {
						bk := tx.Bucket([]byte("kv"))
						for j := 0; j < 64; j++ {
							k := key((c*7919 + j*104729) % keys / 10 * 10)
							bk.Delete(k)
							bk.Put(k, v)
						}
						return nil
					})
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
			})
		}
	}
}
