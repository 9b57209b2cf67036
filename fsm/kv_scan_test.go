package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// scanAll runs a whole scan of keyspace db with count, and returns the keys
// answered (sorted, duplicates kept) and the calls it took.
func (h *harness) scanAll(db, count int) ([]string, int) {
	h.t.Helper()
	var keys []string
	cursor, calls := uint64(0), 0
	for {
		next, err := h.f.ScanKV(db, cursor, count, h.now(), func(k []byte, _ Kind) { keys = append(keys, string(k)) })
		if err != nil {
			h.t.Fatal(err)
		}
		calls++
		if cursor = next; cursor == 0 {
			sort.Strings(keys)
			return keys, calls
		}
		if calls > 100000 {
			h.t.Fatal("the scan does not end")
		}
	}
}

// indexMatchesKV: the scan index holds exactly the keyspace keys of the KV
// bucket, each once.
func (h *harness) indexMatchesKV() {
	h.t.Helper()
	err := h.f.view(func(tx *bolt.Tx) error {
		want := map[string]bool{}
		tx.Bucket(bucketKV).ForEach(func(k, _ []byte) error {
			if e := scanEntry(k); e != nil {
				want[string(e)] = true
			}
			return nil
		})
		n := 0
		err := tx.Bucket(bucketKVScan).ForEach(func(k, _ []byte) error {
			if !want[string(k)] {
				return fmt.Errorf("index entry %q has no key", k)
			}
			n++
			return nil
		})
		if err == nil && n != len(want) {
			err = fmt.Errorf("index holds %d entries for %d keys", n, len(want))
		}
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// TestScanKV: a whole scan answers every live key of its keyspace once and
// nothing of another keyspace or idemgate's own, at every COUNT; deletes,
// renames, expiries (swept or not) and flushes keep the index exact.
func TestScanKV(t *testing.T) {
	h := newHarness(t)
	var want0, want4 []string
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("k%03d", i)
		h.apply(Command{Type: TypeKVSet, Key: KeyspaceKey(0, []byte(k)), Value: []byte("v")})
		h.apply(Command{Type: TypeKVSet, Key: KeyspaceKey(4, []byte(k+"@4")), Value: []byte("v")})
		want0, want4 = append(want0, k), append(want4, k+"@4")
	}
	h.apply(Command{Type: TypeKVSet, Key: KeyspaceKey(0, nil), Value: []byte("empty")})
	h.apply(Command{Type: TypeKVSet, Key: []byte("\x00node/n1"), Value: []byte("own")})
	h.apply(Command{Type: TypeKVSet, Key: KeyspaceKey(0, []byte("short")), Value: []byte("v"), TTL: time.Millisecond})
	h.advance(time.Second) // "short" is expired, not swept
	want0 = append(want0, "")
	sort.Strings(want0)
	for _, count := range []int{1, 7, 10, 1000, MaxScanLook + 1} {
		got, calls := h.scanAll(0, count)
		if fmt.Sprint(got) != fmt.Sprint(want0) {
			t.Fatalf("COUNT %d: keyspace 0 scanned %d keys, want %d: %q", count, len(got), len(want0), got)
		}
		if min := (len(want0) + 1 + count - 1) / count; calls < min {
			t.Fatalf("COUNT %d: %d calls looked at %d entries", count, calls, len(want0)+1)
		}
		if got, _ := h.scanAll(4, count); fmt.Sprint(got) != fmt.Sprint(want4) {
			t.Fatalf("COUNT %d: keyspace 4 scanned %q", count, got)
		}
		if got, calls := h.scanAll(9, count); len(got) != 0 || calls != 1 {
			t.Fatalf("COUNT %d: empty keyspace 9 scanned %q in %d calls", count, got, calls)
		}
	}
	h.indexMatchesKV()
	h.apply(*KVDeleteCommand(KeyspaceKey(0, []byte("k000"))))
	h.apply(*KVRenameCommand(KeyspaceKey(0, []byte("k001")), KeyspaceKey(4, []byte("moved")), RenameNX, false))
	h.apply(*KVRenameCommand(KeyspaceKey(0, []byte("k002")), KeyspaceKey(0, []byte("k002copy")), RenameCopy, false))
	h.apply(Command{Type: TypeKVExpire, Key: KeyspaceKey(0, []byte("k003")), Flags: FlagExpireNow})
	due, err := h.f.Due(h.now(), 10)
	if err != nil || len(due) != 1 {
		t.Fatalf("due: %v, %v", due, err)
	}
	h.apply(Command{Type: TypeExpire, Entries: due})
	h.indexMatchesKV()
	got, _ := h.scanAll(0, 10)
	if len(got) != len(want0)-2 || fmt.Sprint(got[:3]) != "[ k002 k002copy]" { // three gone, one copy more
		t.Fatalf("keyspace 0 after the edits: %d keys %q", len(got), got[:3])
	}
	if got, _ := h.scanAll(4, 10); len(got) != 301 {
		t.Fatalf("keyspace 4 after the move: %d keys", len(got))
	}
	h.flushAll(4, false)
	h.indexMatchesKV()
	if got, _ := h.scanAll(4, 10); len(got) != 0 {
		t.Fatalf("keyspace 4 after FLUSHDB: %q", got)
	}
}

// TestScanKVSharedHash: keys that share a hash are answered by one call,
// whatever COUNT: a call stops only between two hashes, so a cursor (a
// hash) never splits them. (XXH3 collisions cannot be made to order: the
// entries are planted.)
func TestScanKVSharedHash(t *testing.T) {
	h := newHarness(t)
	for _, k := range []string{"a", "b", "c", "d"} {
		h.apply(Command{Type: TypeKVSet, Key: KeyspaceKey(2, []byte(k)), Value: []byte("v")})
	}
	// a and b share hash 5, c and d hash 9.
	err := h.f.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKVScan)
		for _, k := range []string{"a", "b", "c", "d"} {
			if err := b.Delete(scanEntry(KeyspaceKey(2, []byte(k)))); err != nil {
				return err
			}
			h := uint64(5)
			if k > "b" {
				h = 9
			}
			if err := b.Put(append(binary.BigEndian.AppendUint64([]byte{2}, h), KeyspaceKey(2, []byte(k))...), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	next, err := h.f.ScanKV(2, 0, 1, h.now(), func(k []byte, _ Kind) { got = append(got, string(k)) })
	if err != nil || next != 9 || fmt.Sprint(got) != "[a b]" {
		t.Fatalf("the first call: %q, next %d, %v; want [a b] and cursor 9", got, next, err)
	}
	got = nil
	next, _ = h.f.ScanKV(2, 6, 1, h.now(), func(k []byte, _ Kind) { got = append(got, string(k)) })
	if next != 0 || fmt.Sprint(got) != "[c d]" {
		t.Fatalf("from cursor 6: %q, next %d; want [c d] and 0", got, next)
	}
}

// TestScanIndexBuiltForOldFile: a data file of format 1, written before the
// scan index, opens: the index is built from its keys, the format becomes
// 2, and the state is the one a file written with the index from the start
// holds (same data hash).
func TestScanIndexBuiltForOldFile(t *testing.T) {
	h := newHarness(t)
	fresh := newHarness(t)
	for _, hh := range []*harness{h, fresh} {
		for i := 0; i < 2000; i++ {
			hh.apply(Command{Type: TypeKVSet, Key: KeyspaceKey(i%3, []byte(fmt.Sprintf("k%d", i))), Value: []byte("v")})
		}
		hh.apply(Command{Type: TypeKVSet, Key: []byte("\x00node/n1"), Value: []byte("own")})
	}
	path := h.f.cfg.Path
	// Made old: no index bucket, format 1.
	if err := h.f.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketKVScan); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyFormat, formatNoScan)
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.f.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := Open(Config{Path: path, NoSync: true})
	if err != nil {
		t.Fatalf("opening a format 1 file: %v", err)
	}
	defer f.Close()
	h.f = f
	h.indexMatchesKV()
	for db := 0; db < 3; db++ {
		if got, _ := h.scanAll(db, 100); len(got) != 667-boolInt(db == 2) {
			t.Fatalf("keyspace %d: %d keys after the index was built", db, len(got))
		}
	}
	var format []byte
	f.view(func(tx *bolt.Tx) error { format = append(format, tx.Bucket(bucketMeta).Get(keyFormat)...); return nil })
	if string(format) != string(currentFormat) {
		t.Fatalf("format %v after the build", format)
	}
	a, errA := h.f.DataHash()
	b, errB := fresh.f.DataHash()
	if errA != nil || errB != nil || a != b {
		t.Fatalf("the built file's data hash differs from a fresh one's (%v, %v)", errA, errB)
	}
	// A format this build does not know is refused.
	f.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyFormat, []byte{3}) })
	db.Close()
	if f, err := Open(Config{Path: filepath.Clean(path), NoSync: true}); err == nil {
		f.Close()
		t.Fatal("a file of format 3 opened")
	}
}

// TestScanIndexBuiltForOldSnapshot: a snapshot of a format 1 file (no scan
// index) restores into a file with the index built.
func TestScanIndexBuiltForOldSnapshot(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	for i := 0; i < 500; i++ {
		a.apply(Command{Type: TypeKVSet, Key: KeyspaceKey(i%2*7, []byte(fmt.Sprintf("k%d", i))), Value: []byte("v")})
	}
	if err := a.f.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketKVScan); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyFormat, formatNoScan)
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, a.f)))); err != nil {
		t.Fatalf("restoring a format 1 snapshot: %v", err)
	}
	b.indexMatchesKV()
	for _, db := range []int{0, 7} {
		if got, _ := b.scanAll(db, 64); len(got) != 250 {
			t.Fatalf("keyspace %d: %d keys after the restore", db, len(got))
		}
	}
}
