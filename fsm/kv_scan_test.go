package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/zeebo/xxh3"
	bolt "go.etcd.io/bbolt"
)

// scanAll runs a whole scan of keyspace db with count, and returns the keys
// answered (sorted, duplicates kept) and the calls it took.
func (h *harness) scanAll(db, count int) ([]string, int) {
	h.t.Helper()
	var keys []string
	cursor, calls := uint64(0), 0
	for {
		next, err := h.f.ScanKV(db, cursor, count, h.now(), func(k []byte, _ command.Kind) { keys = append(keys, string(k)) })
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
// bucket, each once, under its creation's revision.
func (h *harness) indexMatchesKV() {
	h.t.Helper()
	err := h.f.view(func(tx *bolt.Tx) error {
		want := map[string]bool{}
		tx.Bucket(bucketKV).ForEach(func(k, v []byte) error {
			if e, ok := decodeKV(v); ok && isKeyspaceKey(k) {
				want[string(scanEntry(k, e.Created))] = true
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
		h.apply(command.Command{Type: command.TypeKVSet, Key: command.KeyspaceKey(0, []byte(k)), Value: []byte("v")})
		h.apply(command.Command{Type: command.TypeKVSet, Key: command.KeyspaceKey(4, []byte(k+"@4")), Value: []byte("v")})
		want0, want4 = append(want0, k), append(want4, k+"@4")
	}
	h.apply(command.Command{Type: command.TypeKVSet, Key: command.KeyspaceKey(0, nil), Value: []byte("empty")})
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("\x00node/n1"), Value: []byte("own")})
	h.apply(command.Command{Type: command.TypeKVSet, Key: command.KeyspaceKey(0, []byte("short")), Value: []byte("v"), TTL: time.Millisecond})
	h.advance(time.Second) // "short" is expired, not swept
	want0 = append(want0, "")
	sort.Strings(want0)
	for _, count := range []int{1, 7, 10, 1000, command.MaxScanLook + 1} {
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
	h.apply(*command.KVDeleteCommand(command.KeyspaceKey(0, []byte("k000"))))
	h.apply(*command.KVRenameCommand(command.KeyspaceKey(0, []byte("k001")), command.KeyspaceKey(4, []byte("moved")), command.RenameNX, false))
	h.apply(*command.KVRenameCommand(command.KeyspaceKey(0, []byte("k002")), command.KeyspaceKey(0, []byte("k002copy")), command.RenameCopy, false))
	h.apply(command.Command{Type: command.TypeKVExpire, Key: command.KeyspaceKey(0, []byte("k003")), Flags: command.FlagExpireNow})
	due, err := h.f.Due(h.now(), 10)
	if err != nil || len(due) != 1 {
		t.Fatalf("due: %v, %v", due, err)
	}
	h.apply(command.Command{Type: command.TypeExpire, Entries: due})
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

// TestScanKVSharedRevision: keys that share a revision are answered by one
// call whatever COUNT: a call stops only between two revisions, so a
// cursor never splits them. (Every write has a revision of its own, so the
// shared ones are planted, in a file of format 1 whose index the open
// builds.) A key written again keeps its place; a key created during the
// scan is answered after the rest.
func TestScanKVSharedRevision(t *testing.T) {
	h := newHarness(t)
	set := func(k string) command.Command {
		return command.Command{Type: command.TypeKVSet, Key: command.KeyspaceKey(2, []byte(k)), Value: []byte("v")}
	}
	for _, k := range []string{"z", "a", "b", "c", "d", "e"} {
		h.apply(set(k))
	}
	a, _ := h.kv(string(command.KeyspaceKey(2, []byte("a"))))
	c, _ := h.kv(string(command.KeyspaceKey(2, []byte("c"))))
	h.plantCreated(map[string]uint64{"a": a.Created, "b": a.Created, "c": c.Created, "d": c.Created, "e": c.Created}, 2)
	h.indexMatchesKV()
	scan := func(cursor uint64) ([]string, uint64) {
		var got []string
		next, err := h.f.ScanKV(2, cursor, 1, h.now(), func(k []byte, _ command.Kind) { got = append(got, string(k)) })
		if err != nil {
			t.Fatal(err)
		}
		return got, next
	}
	got, next := scan(0)
	if fmt.Sprint(got) != "[z]" || next == 0 {
		t.Fatalf("the first call: %q, next %d; want [z] and a cursor", got, next)
	}
	h.apply(set("z")) // written again: still where it was
	h.apply(set("y")) // created during the scan
	got, next = scan(next)
	if fmt.Sprint(got) != "[a b]" || next == 0 {
		t.Fatalf("the second call: %q, next %d; want [a b] and a cursor", got, next)
	}
	got, next = scan(next)
	if fmt.Sprint(got) != "[c d e]" || next == 0 {
		t.Fatalf("the third call: %q, next %d; want [c d e] and a cursor", got, next)
	}
	if got, next = scan(next); fmt.Sprint(got) != "[y]" || next != 0 {
		t.Fatalf("the last call: %q, next %d; want [y] and 0", got, next)
	}
	// A cursor between two revisions goes on from the next one.
	if got, _ := scan(1); fmt.Sprint(got) != "[z]" {
		t.Fatalf("from cursor 1: %q", got)
	}
	h.indexMatchesKV()
}

// plantCreated sets the Created of keyspace db's keys (client key ->
// revision) in the KV bucket and reopens the file as one of format 1, whose
// index the open builds.
func (h *harness) plantCreated(created map[string]uint64, db int) {
	h.t.Helper()
	err := h.f.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKV)
		for k, rev := range created {
			stored := command.KeyspaceKey(db, []byte(k))
			e, ok := decodeKV(b.Get(stored))
			if !ok {
				return fmt.Errorf("no key %q", k)
			}
			e = e.Clone()
			e.Created = rev
			if err := b.Put(stored, encodeKV(&e)); err != nil {
				return err
			}
		}
		return h.makeFormat(tx, formatNoScan)
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.reopen()
}

// makeFormat makes tx's file one of an earlier data format, as those
// builds wrote it: 1 has no scan index, 2 an index ordered by a hash of
// the client's key (keyspace | XXH3-64 of the key | stored key).
func (h *harness) makeFormat(tx *bolt.Tx, format []byte) error {
	if err := tx.DeleteBucket(bucketKVScan); err != nil {
		return err
	}
	if string(format) == string(formatHashed) {
		idx, err := tx.CreateBucket(bucketKVScan)
		if err != nil {
			return err
		}
		err = tx.Bucket(bucketKV).ForEach(func(k, _ []byte) error {
			db, key, ok := command.KeyspaceOf(k)
			if !ok {
				return nil
			}
			e := binary.BigEndian.AppendUint64([]byte{byte(db)}, xxh3.Hash(key))
			return idx.Put(append(e, k...), nil)
		})
		if err != nil {
			return err
		}
	}
	return tx.Bucket(bucketMeta).Put(keyFormat, format)
}

// reopen closes the harness's file and opens it again.
func (h *harness) reopen() {
	h.t.Helper()
	path := h.f.cfg.Path
	if err := h.f.Close(); err != nil {
		h.t.Fatal(err)
	}
	f, err := Open(Config{Path: path, NoSync: true})
	if err != nil {
		h.t.Fatalf("reopening: %v", err)
	}
	h.t.Cleanup(func() { f.Close() })
	h.f = f
}

// hostileKeys writes into h keys a migration could get wrong: the empty key
// of keyspace 0 and of keyspace 15, keys of every keyspace, keys of the
// longest length, idemgate's own keys, a key expired but not swept, a
// list, a key written again after its creation and a key renamed (its
// Created is the rename's), and n plain keys.
func (h *harness) hostileKeys(n int) {
	set := func(db int, k string, ttl time.Duration) {
		if r := h.apply(command.Command{Type: command.TypeKVSet, Key: command.KeyspaceKey(db, []byte(k)), Value: []byte("v"), TTL: ttl}); r.Code != command.CodeCreated && r.Code != command.CodeOK {
			h.t.Fatalf("set %d %q: %v", db, k, r.Code)
		}
	}
	for i := 0; i < n; i++ {
		set(i%command.Keyspaces, fmt.Sprintf("k%d", i), 0)
	}
	set(0, "", 0)
	set(15, "", time.Hour)
	set(0, strings.Repeat("x", command.MaxStoredKeyLen), 0)
	set(15, strings.Repeat("y", command.MaxStoredKeyLen-len(command.KeyspacePrefix(15))), 0)
	set(3, "short", time.Millisecond)
	set(0, "k0", time.Hour) // written again
	h.apply(*command.KVRenameCommand(command.KeyspaceKey(0, []byte("k16")), command.KeyspaceKey(9, []byte("renamed")), command.RenamePlain, false))
	h.apply(*command.ListPushCommand(command.KeyspaceKey(5, []byte("list")), [][]byte{[]byte("e")}, true, false))
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("\x00node/n1"), Value: []byte("own")})
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("\x00db\x10not-a-keyspace"), Value: []byte("own")})
	h.advance(time.Second) // "short" is expired, not swept
}

// TestScanIndexBuiltForOldFile: a data file of format 1 (written before the
// scan index) or 2 (an index ordered by hash) opens: the index is built
// from its keys, in bounded transactions, the format becomes 3, and the
// state is the one a file written by this build holds (same data hash);
// SCAN answers every key. A file whose build stopped between two of its
// transactions (format 1, part of the index there) opens the same way.
// A file of only idemgate's own keys, or of no key, has an empty index.
func TestScanIndexBuiltForOldFile(t *testing.T) {
	batch := scanBuildBatch
	scanBuildBatch = 100
	defer func() { scanBuildBatch = batch }()
	for _, tc := range []struct {
		name   string
		format []byte
		keys   int  // -1: only idemgate's own
		half   bool // stopped between two of the build's transactions
	}{
		{"format 1", formatNoScan, 2000, false},
		{"format 2", formatHashed, 2000, false},
		{"format 1, built half", formatNoScan, 2000, true},
		{"format 2, no key", formatHashed, 0, false},
		{"format 1, only own keys", formatNoScan, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, fresh := newHarness(t), newHarness(t)
			for _, hh := range []*harness{h, fresh} {
				if tc.keys >= 0 {
					hh.hostileKeys(tc.keys)
				} else {
					hh.apply(command.Command{Type: command.TypeKVSet, Key: []byte("\x00node/n1"), Value: []byte("own")})
				}
			}
			want := map[int][]string{}
			for db := 0; db < command.Keyspaces; db++ {
				want[db], _ = fresh.scanAll(db, 1000)
			}
			err := h.f.db.Update(func(tx *bolt.Tx) error {
				if err := h.makeFormat(tx, tc.format); err != nil {
					return err
				}
				if !tc.half {
					return nil
				}
				// What a build stopped after its first transactions left:
				// part of the index, format 1.
				idx, err := tx.CreateBucketIfNotExists(bucketKVScan)
				if err != nil {
					return err
				}
				c := tx.Bucket(bucketKV).Cursor()
				k, v := c.First()
				for i := 0; k != nil && i < 3*scanBuildBatch; k, v = c.Next() {
					if e, ok := decodeKV(v); ok && isKeyspaceKey(k) {
						if err := idx.Put(scanEntry(k, e.Created), nil); err != nil {
							return err
						}
						i++
					}
				}
				return tx.Bucket(bucketMeta).Put(keyFormat, formatNoScan)
			})
			if err != nil {
				t.Fatal(err)
			}
			h.reopen()
			h.indexMatchesKV()
			for db := 0; db < command.Keyspaces; db++ {
				if got, _ := h.scanAll(db, 100); fmt.Sprint(got) != fmt.Sprint(want[db]) {
					t.Fatalf("keyspace %d: %d keys after the index was built, want %d", db, len(got), len(want[db]))
				}
			}
			var format []byte
			h.f.view(func(tx *bolt.Tx) error { format = append(format, tx.Bucket(bucketMeta).Get(keyFormat)...); return nil })
			if string(format) != string(currentFormat) {
				t.Fatalf("format %v after the build", format)
			}
			a, errA := h.f.DataHash()
			b, errB := fresh.f.DataHash()
			if errA != nil || errB != nil || a != b {
				t.Fatalf("the built file's data hash differs from a fresh one's (%v, %v)", errA, errB)
			}
		})
	}
}

// TestNewerFormatRefused: a file of a format this build does not know (a
// newer build's) is refused, and says so.
func TestNewerFormatRefused(t *testing.T) {
	h := newHarness(t)
	path := h.f.cfg.Path
	h.f.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyFormat, []byte{4}) })
	db.Close()
	f, err := Open(Config{Path: path, NoSync: true})
	if err == nil {
		f.Close()
		t.Fatal("a file of format 4 opened")
	}
	if !strings.Contains(err.Error(), "data format [4], and this build reads formats 1 to 3") {
		t.Fatalf("refused with %q", err)
	}
}

// TestScanIndexBuiltForOldSnapshot: a snapshot of a format 1 file (no scan
// index) or of a format 2 file (an index ordered by hash) restores into a
// file of this format, the index built.
func TestScanIndexBuiltForOldSnapshot(t *testing.T) {
	for _, format := range [][]byte{formatNoScan, formatHashed} {
		a, b, fresh := newHarness(t), newHarness(t), newHarness(t)
		a.hostileKeys(500)
		fresh.hostileKeys(500)
		if err := a.f.db.Update(func(tx *bolt.Tx) error { return a.makeFormat(tx, format) }); err != nil {
			t.Fatal(err)
		}
		if err := b.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, a.f)))); err != nil {
			t.Fatalf("restoring a format %v snapshot: %v", format, err)
		}
		b.indexMatchesKV()
		b.clock = a.clock // "short" is expired there too
		for db := 0; db < command.Keyspaces; db++ {
			want, _ := fresh.scanAll(db, 64)
			if got, _ := b.scanAll(db, 64); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("format %v, keyspace %d: %d keys after the restore, want %d", format, db, len(got), len(want))
			}
		}
		x, errX := b.f.DataHash()
		y, errY := fresh.f.DataHash()
		if errX != nil || errY != nil || x != y {
			t.Fatalf("format %v: the restored file's data hash differs from a fresh one's (%v, %v)", format, errX, errY)
		}
	}
}
