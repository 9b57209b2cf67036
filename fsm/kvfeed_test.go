package fsm

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// feedLog is a KVObserver that records what it is told.
type feedLog struct {
	watching atomic.Bool
	batches  [][]string               // each batch's keys, sorted; nil for "all"
	by       map[string]command.ReqID // the last writer told of each key
	calls    int
}

func (l *feedLog) KVWatching() bool { return l.watching.Load() }

func (l *feedLog) KVChanged(keys [][]byte, by []command.ReqID, all bool) {
	l.calls++
	if all {
		l.batches = append(l.batches, nil)
		return
	}
	if len(by) != len(keys) {
		panic(fmt.Sprintf("told %d keys and %d writers", len(keys), len(by)))
	}
	if l.by == nil {
		l.by = map[string]command.ReqID{}
	}
	var ks []string
	for i, k := range keys {
		ks = append(ks, string(k)) // copied: keys alias the feed's buffer
		l.by[string(k)] = by[i]
	}
	slices.Sort(ks)
	l.batches = append(l.batches, slices.Compact(ks))
}

func (l *feedLog) take() [][]string { b := l.batches; l.batches = nil; return b }

// TestKVFeed: every way a KV key changes reaches the observer (a write, a
// delete, an expiry by the sweeper and by the next write, a rename, a
// transaction, a script's effects are the same putKV/deleteKV); nothing
// is collected while no one watches; a batch that straddles the start of
// watching, and a snapshot restore, say "all".
func TestKVFeed(t *testing.T) {
	h := newHarness(t)
	l := &feedLog{}
	h.f.SetKVObserver(l)
	set := func(k string, ttl time.Duration) command.Command {
		return *command.KVSetCommand(command.KVSetRequest{Key: []byte(k), Value: []byte("v"), TTL: ttl})
	}

	h.apply(set("quiet", 0))
	if l.calls != 0 {
		t.Fatalf("not watching: %d calls, want 0", l.calls)
	}

	l.watching.Store(true)
	steps := []struct {
		name string
		cmd  command.Command
		want [][]string
	}{
		{"set", set("a", 0), [][]string{{"a"}}},
		{"set with a lifetime", set("short", time.Second), [][]string{{"short"}}},
		{"nx on a live key changes nothing", *command.KVSetCommand(command.KVSetRequest{Key: []byte("a"), Value: []byte("w"), Mode: command.SetNX}), nil},
		{"incr", *command.KVIncrCommand([]byte("n"), 1), [][]string{{"n"}}},
		{"rename moves two keys", *command.KVRenameCommand([]byte("a"), []byte("b"), command.RenamePlain, false), [][]string{{"a", "b"}}},
		{"delete", *command.KVDeleteCommand([]byte("b")), [][]string{{"b"}}},
		{"delete of nothing", *command.KVDeleteCommand([]byte("b")), nil},
		{"a transaction", *command.KVTxCommand(command.TxRequest{Commands: []*command.Command{command.KVIncrCommand([]byte("t1"), 1), command.KVIncrCommand([]byte("t2"), 1)}}), [][]string{{"t1", "t2"}}},
	}
	for _, s := range steps {
		h.apply(s.cmd)
		if got := l.take(); !slices.EqualFunc(got, s.want, slices.Equal) {
			t.Fatalf("%s: told %q, want %q", s.name, got, s.want)
		}
	}

	h.advance(2 * time.Second)
	h.apply(*command.ExpireCommand([]ttl.Entry{{Kind: ttl.KindKV, Key: []byte("short"), At: h.clock - int64(time.Second)}}))
	if got := l.take(); !slices.EqualFunc(got, [][]string{{"short"}}, slices.Equal) {
		t.Fatalf("expiry by the sweeper: told %q", got)
	}
	h.apply(set("short2", time.Second))
	h.advance(2 * time.Second)
	l.take()
	h.apply(set("short2", 0)) // the write finds it expired: a delete, then a put
	if got := l.take(); !slices.EqualFunc(got, [][]string{{"short2"}}, slices.Equal) {
		t.Fatalf("expiry by the next write: told %q", got)
	}

	// A batch whose apply began before watching did: "all".
	l.watching.Store(false)
	strad := &straddle{feedLog: l}
	h.f.SetKVObserver(strad)
	h.apply(set("x", 0))
	if got := l.take(); len(got) != 1 || got[0] != nil {
		t.Fatalf("straddling batch: told %q, want one \"all\"", got)
	}

	// A restore: "all".
	snap := snapshotBytes(t, h.f)
	h.f.SetKVObserver(l)
	if err := h.f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	if got := l.take(); len(got) != 1 || got[0] != nil {
		t.Fatalf("restore: told %q, want one \"all\"", got)
	}
}

// TestKVFeedWriters: each changed key comes with the request id of the
// command that changed it, within one log entry of several commands, a
// transaction's commands (the transaction's id), and an expiry (the
// sweeper's command's): what client-side caching's NOLOOP tells a
// connection's own writes by.
func TestKVFeedWriters(t *testing.T) {
	h := newHarness(t)
	l := &feedLog{}
	l.watching.Store(true)
	h.f.SetKVObserver(l)
	id := func(b byte) command.ReqID { return command.ReqID{15: b} }
	with := func(c *command.Command, b byte) command.Command { c.ReqID = id(b); return *c }
	h.applyBatch(
		with(command.KVSetCommand(command.KVSetRequest{Key: []byte("a"), Value: []byte("v"), TTL: time.Second}), 1),
		with(command.KVIncrCommand([]byte("b"), 1), 2),
		with(command.KVTxCommand(command.TxRequest{Commands: []*command.Command{command.KVIncrCommand([]byte("t1"), 1), command.KVIncrCommand([]byte("t2"), 1)}}), 3),
	)
	h.advance(2 * time.Second)
	h.apply(with(command.ExpireCommand([]ttl.Entry{{Kind: ttl.KindKV, Key: []byte("a"), At: h.clock - int64(time.Second)}}), 4))
	if got := l.take(); len(got) != 2 {
		t.Fatalf("told %q, want two batches", got)
	}
	for key, want := range map[string]byte{"a": 4, "b": 2, "t1": 3, "t2": 3} {
		if l.by[key] != id(want) {
			t.Errorf("%s: told writer %x, want %x", key, l.by[key], id(want))
		}
	}
}

// straddle says "not watching" on its first question (the batch's start)
// and "watching" from then on.
type straddle struct {
	*feedLog
	asked int
}

func (s *straddle) KVWatching() bool { s.asked++; return s.asked > 1 }

// BenchmarkApplySETNX: a SETNX's apply with no observer, with one nobody
// watches (the cost of the feed when no client tracks: it must be ~0 and
// allocate nothing more), and with one watching.
func BenchmarkApplySETNX(b *testing.B) {
	for _, mode := range []string{"no-observer", "idle", "watching"} {
		b.Run(mode, func(b *testing.B) {
			f, err := Open(Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			l := &countingObserver{}
			switch mode {
			case "idle":
				f.SetKVObserver(l)
			case "watching":
				l.watching = true
				f.SetKVObserver(l)
			}
			logs := make([]*raft.Log, b.N)
			for i := range logs {
				c := command.KVSetCommand(command.KVSetRequest{Key: []byte("lock:" + strconv.Itoa(i)), Value: []byte("owner"), Mode: command.SetNX, TTL: time.Minute})
				c.Stamp = time.Now().UnixNano()
				logs[i] = &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: c.Encode(nil)}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range logs {
				f.ApplyBatch(logs[i : i+1])
			}
			b.StopTimer()
			if mode == "watching" && l.keys != b.N {
				b.Fatalf("told %d keys, want %d", l.keys, b.N)
			}
		})
	}
}

type countingObserver struct {
	watching bool
	keys     int
}

func (o *countingObserver) KVWatching() bool { return o.watching }

func (o *countingObserver) KVChanged(keys [][]byte, _ []command.ReqID, _ bool) { o.keys += len(keys) }

// TestKVFeedAllocations: the feed's own work in a batch (start, a changed
// key, finish) allocates nothing while no one watches, and nothing once
// its buffers have grown while someone does.
func TestKVFeedAllocations(t *testing.T) {
	for _, watching := range []bool{false, true} {
		f := &FSM{}
		o := &countingObserver{watching: watching}
		f.SetKVObserver(o)
		key := []byte("lock:12345")
		batch := func() {
			a := applier{f: f}
			a.kvStart()
			a.kvTouched(key)
			a.kvTouched(key)
			a.kvFinish()
		}
		batch() // grows the buffers once
		if n := testing.AllocsPerRun(1000, batch); n != 0 {
			t.Errorf("watching %v: %.1f allocations per batch, want 0", watching, n)
		}
		if watching && o.keys != 2*1002 {
			t.Errorf("told %d keys, want %d", o.keys, 2*1002)
		}
	}
}

// TestKVFeedFlushHook: a command that empties the keyspace calls
// kvChangedAll in its apply; the observer is then told "all" (and not the
// keys the batch also named), whether it was watching or not.
func TestKVFeedFlushHook(t *testing.T) {
	for _, watching := range []bool{true, false} {
		f := &FSM{}
		l := &feedLog{}
		l.watching.Store(watching)
		f.SetKVObserver(l)
		a := applier{f: f}
		a.kvStart()
		a.kvTouched([]byte("k"))
		a.kvChangedAll()
		a.kvFinish()
		if got := l.take(); len(got) != 1 || got[0] != nil {
			t.Fatalf("watching %v: told %q, want one \"all\"", watching, got)
		}
	}
}
