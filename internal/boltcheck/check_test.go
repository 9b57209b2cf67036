package boltcheck

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// options are the node's: both of its files skip the freelist sync, so
// bbolt rebuilds the freelist by walking every page when it opens them.
func options(syncFreelist bool) *bolt.Options {
	return &bolt.Options{Timeout: time.Second, NoFreelistSync: !syncFreelist, FreelistType: bolt.FreelistMapType}
}

// makeFile writes a file with every kind of page: branch and leaf pages,
// overflow pages (large values), nested buckets and inline buckets, and
// pages freed by a delete.
func makeFile(t *testing.T, syncFreelist bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.db")
	db, err := bolt.Open(path, 0o600, options(syncFreelist))
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		big, _ := tx.CreateBucket([]byte("big"))
		for i := 0; i < 400; i++ {
			if err := big.Put([]byte(fmt.Sprintf("key-%04d", i)), bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
				return err
			}
		}
		big.Put([]byte("overflow"), make([]byte, 3*4096))
		outer, _ := tx.CreateBucket([]byte("outer"))
		inner, _ := outer.CreateBucket([]byte("inline"))
		inner.Put([]byte("a"), []byte("b"))
		deep, _ := outer.CreateBucket([]byte("deep"))
		for i := 0; i < 200; i++ {
			deep.Put([]byte(fmt.Sprintf("d-%04d", i)), make([]byte, 50))
		}
		return nil
	})
	if err == nil {
		err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("big")).Delete([]byte("overflow")) })
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// pages returns the file's page size and the ids of its pages by type.
func pages(t *testing.T, path string) (int, map[string][]int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	byType := map[string][]int{}
	err = db.View(func(tx *bolt.Tx) error {
		for id := 0; ; id++ {
			p, err := tx.Page(id)
			if err != nil {
				return err
			}
			if p == nil {
				return nil
			}
			byType[p.Type] = append(byType[p.Type], id)
			id += p.OverflowCount
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return db.Info().PageSize, byType
}

func patch(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func u64(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }
func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

func TestIntactFilePasses(t *testing.T) {
	for _, sync := range []bool{false, true} {
		path := makeFile(t, sync)
		for _, full := range []bool{false, true} {
			if err := Check(path, full); err != nil {
				t.Errorf("freelist synced %v, full %v: Check = %v, want nil", sync, full, err)
			}
		}
	}
}

// TestDamageIsReported: each way a file is found damaged is a *Damage
// naming what is wrong, never a panic or a fault.
func TestDamageIsReported(t *testing.T) {
	tests := []struct {
		name string
		sync bool // freelist synced
		harm func(t *testing.T, path string, ps int, byType map[string][]int)
		want string
	}{
		{"empty", false, func(t *testing.T, path string, _ int, _ map[string][]int) {
			os.Truncate(path, 0)
		}, "empty"},
		{"truncated to half", false, func(t *testing.T, path string, _ int, _ map[string][]int) {
			st, _ := os.Stat(path)
			os.Truncate(path, st.Size()/2)
		}, "truncated"},
		{"truncated inside the first page", false, func(t *testing.T, path string, _ int, _ map[string][]int) {
			os.Truncate(path, 40)
		}, "too short"},
		{"both meta pages zeroed", false, func(t *testing.T, path string, ps int, _ map[string][]int) {
			patch(t, path, 0, make([]byte, 2*ps))
		}, "meta page"},
		{"branch page overwritten with random bytes", false, func(t *testing.T, path string, ps int, byType map[string][]int) {
			b := make([]byte, ps)
			rand.New(rand.NewSource(1)).Read(b)
			patch(t, path, int64(byType["branch"][0]*ps), b)
		}, "page "},
		{"branch element points past the end", false, func(t *testing.T, path string, ps int, byType map[string][]int) {
			patch(t, path, int64(byType["branch"][0]*ps+16+8), u64(1<<40))
		}, "outside the file"},
		{"branch element points at its own page", false, func(t *testing.T, path string, ps int, byType map[string][]int) {
			id := byType["branch"][0]
			patch(t, path, int64(id*ps+16+8), u64(uint64(id)))
		}, "reached twice"},
		{"leaf element's key offset outside its page", false, func(t *testing.T, path string, ps int, byType map[string][]int) {
			patch(t, path, int64(byType["leaf"][0]*ps+16+4), u32(0xFFFFFF00))
		}, "outside the page"},
		{"page header names another page", false, func(t *testing.T, path string, ps int, byType map[string][]int) {
			id := byType["leaf"][1]
			patch(t, path, int64(id*ps), u64(uint64(id+1)))
		}, "header says it is page"},
		{"leaf element count larger than the page", false, func(t *testing.T, path string, ps int, byType map[string][]int) {
			patch(t, path, int64(byType["leaf"][0]*ps+10), []byte{0xff, 0xff})
		}, "do not fit"},
		{"freelist holds a page past the end", true, func(t *testing.T, path string, ps int, byType map[string][]int) {
			patch(t, path, int64(byType["freelist"][0]*ps+16), u64(1<<40))
		}, "freelist holds page"},
		{"keys out of order", false, func(t *testing.T, path string, ps int, byType map[string][]int) {
			swapFirstKeys(t, path, ps, byType["leaf"])
		}, "is not above the one before it"},
		{"a page neither reachable nor free (bbolt's own check)", true, func(t *testing.T, path string, ps int, byType map[string][]int) {
			// One id fewer in the freelist: only tx.Check sees it.
			off := int64(byType["freelist"][0]*ps + 10)
			b := make([]byte, 2)
			f, _ := os.Open(path)
			f.ReadAt(b, off)
			f.Close()
			n := binary.NativeEndian.Uint16(b)
			if n == 0 || n == 0xFFFF {
				t.Fatalf("freelist count %d: the test needs a short freelist", n)
			}
			patch(t, path, off, binary.NativeEndian.AppendUint16(nil, n-1))
		}, "unreachable unfreed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := makeFile(t, tt.sync)
			ps, byType := pages(t, path)
			tt.harm(t, path, ps, byType)
			err := Check(path, true)
			var d *Damage
			if !errors.As(err, &d) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v, want a *Damage saying %q", err, tt.want)
			}
		})
	}
}

// TestFreePageInUse: a synced freelist that holds a page in use is damage
// the structural walk finds by itself (bbolt would overwrite the page at its
// next commit), as a node's files open with the free list written when they
// were closed.
func TestFreePageInUse(t *testing.T) {
	path := makeFile(t, true)
	ps, byType := pages(t, path)
	fl := byType["freelist"][0]
	b := make([]byte, 2)
	f, _ := os.Open(path)
	f.ReadAt(b, int64(fl*ps+10))
	f.Close()
	if n := binary.NativeEndian.Uint16(b); n == 0 || n == 0xFFFF {
		t.Fatalf("freelist count %d: the test needs a short freelist", n)
	}
	leaf := byType["leaf"][0]
	patch(t, path, int64(fl*ps+16), u64(uint64(leaf)))
	err := Check(path, false)
	var d *Damage
	if !errors.As(err, &d) || !strings.Contains(err.Error(), fmt.Sprintf("page %d: the freelist", leaf)) {
		t.Fatalf("Check = %v, want a *Damage saying page %d is free and in use", err, leaf)
	}
}

// TestShrinkWhileMapped: a file that shrinks while the walk reads it
// through its memory map is a *Damage, not a fault that ends the process.
func TestShrinkWhileMapped(t *testing.T) {
	path := makeFile(t, false)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	w := &walker{size: st.Size()}
	err = walkMapped(w, f, func() error {
		if _, ok := w.f.(mapped); !ok {
			t.Fatalf("walker reads through %T, want the memory map", w.f)
		}
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		_, err := w.f.ReadAt(make([]byte, 16), st.Size()-4096)
		return err
	})
	var d *Damage
	if !errors.As(err, &d) || !strings.Contains(err.Error(), "faulted") {
		t.Fatalf("walk of a shrunk file = %v, want a *Damage saying it faulted", err)
	}
}

// swapFirstKeys finds a leaf page of plain keys "key-NNNN" and swaps its
// first two keys.
func swapFirstKeys(t *testing.T, path string, ps int, leaves []int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range leaves {
		p := b[id*ps : (id+1)*ps]
		key := func(i int) []byte {
			e := p[16+i*16:]
			pos, ksize := binary.NativeEndian.Uint32(e[4:]), binary.NativeEndian.Uint32(e[8:])
			return p[16+i*16+int(pos) : 16+i*16+int(pos)+int(ksize)]
		}
		if binary.NativeEndian.Uint16(p[10:]) < 2 || !bytes.HasPrefix(key(0), []byte("key-")) {
			continue
		}
		k0, k1 := key(0), key(1)
		for i := range k0 {
			k0[i], k1[i] = k1[i], k0[i]
		}
		patch(t, path, int64(id*ps), p)
		return
	}
	t.Fatal("no leaf of plain keys")
}

// TestNoPageDamageCrashesBbolt damages every page of a file in several ways,
// one at a time. Check must either report it, or pass a file that bbolt
// opens read-write (walking every page, as the node does) and reads in full
// without a panic. A fault or a panic in bbolt's own goroutines ends this
// test binary: that is the failure this package exists to prevent.
func TestNoPageDamageCrashesBbolt(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	harms := []struct {
		name string
		do   func(page []byte, other []byte)
	}{
		{"random bytes", func(p, _ []byte) { rng.Read(p) }},
		{"zeros", func(p, _ []byte) { clear(p) }},
		{"another page's contents", func(p, o []byte) { copy(p, o) }},
		{"random bytes after the header", func(p, _ []byte) { rng.Read(p[16:]) }},
		{"a flipped byte in the elements", func(p, _ []byte) { p[16+rng.Intn(64)] ^= 0x80 }},
		{"a flipped count", func(p, _ []byte) { p[10] ^= 0x40 }},
		{"a flipped byte anywhere", func(p, _ []byte) { p[rng.Intn(len(p))] ^= byte(1 + rng.Intn(255)) }},
		{"another flipped byte anywhere", func(p, _ []byte) { p[rng.Intn(len(p))] ^= byte(1 + rng.Intn(255)) }},
		{"two keys swapped", func(p, _ []byte) {
			if binary.NativeEndian.Uint16(p[8:]) != 0x02 || binary.NativeEndian.Uint16(p[10:]) < 2 {
				return // not a leaf of two keys or more
			}
			key := func(i int) []byte {
				e := p[16+16*i:]
				start := 16 + 16*i + int(binary.NativeEndian.Uint32(e[4:]))
				end := start + int(binary.NativeEndian.Uint32(e[8:]))
				if end > len(p) {
					return nil
				}
				return p[start:end]
			}
			if k0, k1 := key(0), key(1); k0 != nil && len(k0) == len(k1) {
				tmp := bytes.Clone(k0)
				copy(k0, k1)
				copy(k1, tmp)
			}
		}},
	}
	for _, sync := range []bool{false, true} {
		orig := makeFile(t, sync)
		good, err := os.ReadFile(orig)
		if err != nil {
			t.Fatal(err)
		}
		ps, _ := pages(t, orig)
		for id := 0; id < len(good)/ps; id++ {
			for _, h := range harms {
				b := bytes.Clone(good)
				h.do(b[id*ps:(id+1)*ps], good[((id+3)%(len(good)/ps))*ps:])
				path := filepath.Join(t.TempDir(), "data.db")
				if err := os.WriteFile(path, b, 0o600); err != nil {
					t.Fatal(err)
				}
				err := Check(path, true)
				var d *Damage
				if err != nil && !errors.As(err, &d) {
					t.Fatalf("page %d, %s: Check = %v, want nil or a *Damage", id, h.name, err)
				}
				if err == nil {
					if perr := openAndReadAll(path, sync); perr != nil {
						t.Errorf("page %d, %s (freelist synced %v): Check passed it, but %v", id, h.name, sync, perr)
					}
				}
			}
		}
	}
}

// openAndReadAll opens path as the node would and reads every key of every
// bucket, turning a panic in this goroutine into an error.
func openAndReadAll(path string, sync bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("bbolt panicked: %v", r)
		}
	}()
	db, err := bolt.Open(path, 0o600, options(sync))
	if err != nil {
		return nil // an error, not a crash: fine
	}
	defer db.Close()
	var walk func(b *bolt.Bucket) error
	walk = func(b *bolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return walk(b.Bucket(k))
			}
			return nil
		})
	}
	return db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return walk(b) })
	})
}
