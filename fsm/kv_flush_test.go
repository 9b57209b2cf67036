package fsm

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// flushAll runs a flush to its end, as the Redis face does: its steps, and
// how many keys each deleted.
func (h *harness) flushAll(db int, all bool) []uint64 {
	h.t.Helper()
	var (
		bound   uint64
		from    []byte
		deleted []uint64
	)
	for {
		r := h.apply(*command.KVFlushCommand(db, all, bound, from))
		if r.Code != command.CodeOK {
			h.t.Fatalf("flush step: %d", r.Code)
		}
		if bound != 0 && r.Version != bound {
			h.t.Fatalf("a step changed the bound from %d to %d", bound, r.Version)
		}
		bound, from, deleted = r.Version, r.Value, append(deleted, r.Fence)
		if len(from) == 0 {
			return deleted
		}
		if len(deleted) > 1000 {
			h.t.Fatal("the flush does not end")
		}
	}
}

// storedKeys is every key of the KV bucket, reserved ones included.
func (h *harness) storedKeys() []string {
	h.t.Helper()
	var out []string
	h.f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketKV).ForEach(func(k, _ []byte) error { out = append(out, string(k)); return nil })
	})
	return out
}

// TestKVFlushKeyspaces: a flush of one keyspace deletes its keys (live,
// with a lifetime, and expired but not swept, with their expiry-index
// entries) and nothing of another keyspace's, nor idemgate's own keys,
// nor keys that only look like a keyspace's; FLUSHALL deletes every
// keyspace's and keeps idemgate's own.
func TestKVFlushKeyspaces(t *testing.T) {
	h := newHarness(t)
	set := func(k []byte, ttl time.Duration) {
		if r := h.apply(command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("v"), TTL: ttl}); r.Code != command.CodeCreated && r.Code != command.CodeOK {
			t.Fatalf("set %q: %d", k, r.Code)
		}
	}
	for db := 0; db < command.Keyspaces; db++ {
		for _, k := range []string{"", "a", "b", "\x00db\x01"} {
			if db == 0 && k == "\x00db\x01" {
				continue // a client key of keyspace 0 never begins with NUL
			}
			set(command.KeyspaceKey(db, []byte(k)), 0)
		}
		set(command.KeyspaceKey(db, []byte("ttl")), time.Hour)
		set(command.KeyspaceKey(db, []byte("gone")), time.Millisecond)
	}
	set([]byte("\x00node/n1"), 0)    // idemgate's own
	set([]byte("\x00dbx"), 0)        // reserved, not a keyspace's (16 keyspaces only)
	set([]byte("\x00db\x10a"), 0)    // past the last keyspace
	set([]byte("\x00db\x00tail"), 0) // keyspace 0 under the prefix holds the empty key alone
	h.advance(time.Second)
	before := h.storedKeys()
	due, _ := h.f.CountDue(h.now().Add(2*time.Hour), 1000)

	if got := h.flushAll(3, false); fmt.Sprint(got) != "[6]" {
		t.Fatalf("FLUSHDB 3 deleted %v, want one step of 6", got)
	}
	var want []string
	for _, k := range before {
		if db, _, ok := command.KeyspaceOf([]byte(k)); !ok || db != 3 {
			want = append(want, k)
		}
	}
	if got := h.storedKeys(); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Fatalf("after FLUSHDB 3:\n got  %q\n want %q", got, want)
	}
	if n, _ := h.f.CountDue(h.now().Add(2*time.Hour), 1000); n != due-2 {
		t.Fatalf("expiry-index entries: %d, want %d (keyspace 3's two gone)", n, due-2)
	}
	if got := h.flushAll(0, false); fmt.Sprint(got) != "[5]" {
		t.Fatalf("FLUSHDB 0 deleted %v, want 5", got)
	}
	h.flushAll(0, true)
	if got := h.storedKeys(); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", []string{"\x00db\x00tail", "\x00db\x10a", "\x00dbx", "\x00node/n1"}) {
		t.Fatalf("after FLUSHALL: %q; want idemgate's own keys alone", got)
	}
	if n, _ := h.f.CountDue(h.now().Add(2*time.Hour), 1000); n != 0 {
		t.Fatalf("%d expiry-index entries after FLUSHALL", n)
	}
}

// TestKVFlushSteps: a keyspace larger than a step is flushed by a series
// of entries, each looking at no more than flushStep keys; a key written
// between two steps is kept (ordered after the flush), and so is one
// written over; the keys of another keyspace between the steps' ranges
// are untouched.
func TestKVFlushSteps(t *testing.T) {
	h := newHarness(t)
	n := 2*flushStep + 500
	const perEntry = 512
	for i := 0; i < n; i += perEntry {
		var cs []command.Command
		for j := i; j < min(i+perEntry, n); j++ {
			cs = append(cs, command.Command{Type: command.TypeKVSet, Key: command.KeyspaceKey(7, []byte(fmt.Sprintf("k%06d", j))), Value: []byte("v")},
				command.Command{Type: command.TypeKVSet, Key: command.KeyspaceKey(8, []byte(fmt.Sprintf("k%06d", j))), Value: []byte("v")})
		}
		h.applyBatch(cs...)
	}
	first := h.apply(*command.KVFlushCommand(7, false, 0, nil))
	if first.Fence != flushStep || len(first.Value) == 0 {
		t.Fatalf("the first step deleted %d, resume %q; want %d and more to do", first.Fence, first.Value, flushStep)
	}
	late, over := command.KeyspaceKey(7, []byte("k000001")), command.KeyspaceKey(7, []byte(fmt.Sprintf("k%06d", n-1)))
	h.apply(command.Command{Type: command.TypeKVSet, Key: late, Value: []byte("late")})
	h.apply(command.Command{Type: command.TypeKVSet, Key: over, Value: []byte("over")})
	bound, from, steps := first.Version, first.Value, 1
	for len(from) > 0 {
		r := h.apply(*command.KVFlushCommand(7, false, bound, from))
		if r.Fence > flushStep {
			t.Fatalf("a step deleted %d keys, over %d", r.Fence, flushStep)
		}
		from, steps = r.Value, steps+1
	}
	if steps != 3 {
		t.Fatalf("%d steps for %d keys, want 3", steps, n)
	}
	var left []string
	h.f.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketKV).Cursor()
		p := command.KeyspacePrefix(7)
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
			left = append(left, string(k[len(p):]))
		}
		return nil
	})
	if fmt.Sprint(left) != fmt.Sprintf("[k000001 k%06d]", n-1) {
		t.Fatalf("keyspace 7 after the flush: %q; want the two keys written during it", left)
	}
	count := 0
	h.f.EachKV(command.KeyspacePrefix(8), h.now(), func(k []byte) bool {
		count += boolInt(bytes.HasPrefix(k, command.KeyspacePrefix(8)))
		return true
	})
	if count != n {
		t.Fatalf("keyspace 8 holds %d keys, want %d", count, n)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestKVFlushRefusals: a keyspace past the last, an unknown flag and an
// over-long resume key are refused before they are applied.
func TestKVFlushRefusals(t *testing.T) {
	for _, c := range []*command.Command{
		{Type: command.TypeKVFlush, Mode: command.SetMode(command.Keyspaces)},
		{Type: command.TypeKVFlush, Mode: 255},
		{Type: command.TypeKVFlush, Flags: 2},
		{Type: command.TypeKVFlush, Value: bytes.Repeat([]byte("k"), command.MaxStoredKeyLen+5)},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: valid", c)
		}
	}
}

// BenchmarkFlushStep measures one flush step of flushStep keys (of
// 100-byte values, half with a lifetime): the longest an entry of a flush
// holds the log.
//
//	go test -run XXX -bench FlushStep ./fsm
func BenchmarkFlushStep(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		h := &harness{f: f, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()}
		for j := 0; j < flushStep; j += 256 {
			var cs []command.Command
			for k := j; k < min(j+256, flushStep); k++ {
				cs = append(cs, command.Command{Type: command.TypeKVSet, Key: command.KeyspaceKey(1, []byte(fmt.Sprintf("key-%08d", k))),
					Value: bytes.Repeat([]byte{'v'}, 100), TTL: time.Duration(k%2) * time.Hour})
			}
			f.Apply(h.batch(cs...))
		}
		b.StartTimer()
		r := f.Apply(h.log(*command.KVFlushCommand(1, false, 0, nil)))
		b.StopTimer()
		if res, ok := r.(*command.Result); !ok || res.Fence != flushStep {
			b.Fatalf("the step answered %v", r)
		}
		f.Close()
	}
}
