package fsm

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/idemgate/idemgate/command"
)

// amortised is a harness whose state machine keeps its transaction open
// for every entries log entries, or interval.
func amortised(t *testing.T, path string, every int, interval time.Duration) *harness {
	t.Helper()
	f, err := Open(Config{Path: path, NoSync: true, CommitEvery: every, CommitInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &harness{t: t, f: f, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()}
}

func TestCommitConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fsm.db")
	for _, tc := range []struct {
		every    int
		interval time.Duration
		want     string // "" valid
	}{
		{0, 0, ""},
		{1, 0, ""},
		{2, time.Millisecond, ""},
		{MaxCommitEvery, time.Minute, ""},
		{-1, time.Second, "fsm: CommitEvery -1: want 0 to 1048576"},
		{MaxCommitEvery + 1, time.Second, "fsm: CommitEvery 1048577: want 0 to 1048576"},
		{2, 0, "fsm: CommitInterval 0s: want more than 0 and at most 1m with CommitEvery 2"},
		{2, -time.Second, "fsm: CommitInterval -1s: want more than 0 and at most 1m with CommitEvery 2"},
		{2, time.Hour, "fsm: CommitInterval 1h0m0s: want more than 0 and at most 1m with CommitEvery 2"},
	} {
		err := Config{Path: path, CommitEvery: tc.every, CommitInterval: tc.interval}.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("Validate(every %d, interval %s) = %q, want %q", tc.every, tc.interval, got, tc.want)
		}
	}
}

// TestAmortisedReadsSeeEveryEntry: with the transaction open across
// batches, a read right after an apply sees it: a read of a key inside the
// writer, without a commit; any other read after committing what is open.
// Batches nobody reads are not committed one by one.
func TestAmortisedReadsSeeEveryEntry(t *testing.T) {
	h := amortised(t, filepath.Join(t.TempDir(), "fsm.db"), 1<<20, time.Minute)
	ctr := []byte("ctr")
	for i := 1; i <= 20; i++ {
		key := []byte(fmt.Sprint("k", i))
		if r := h.apply(*command.KVSetCommand(command.KVSetRequest{Key: key, Value: []byte("v"), Mode: command.SetNX})); r.Code != command.CodeCreated {
			t.Fatalf("SETNX %s = %v", key, r.Code)
		}
		c := command.KVIncrCommand(ctr, 1)
		c.ReqID = reqID(byte(i))
		h.apply(*c)
		if _, err := h.f.KV(key, h.now()); err != nil {
			t.Fatalf("KV(%s) right after its apply: %v", key, err)
		}
		if e, err := h.f.KV(ctr, h.now()); err != nil || string(e.Value) != fmt.Sprint(i) {
			t.Fatalf("counter after %d increments = %q, %v", i, e.Value, err)
		}
		if i%5 == 0 {
			var keys []string
			err := h.f.EachKV(nil, h.now(), func(k []byte) bool { keys = append(keys, string(k)); return true })
			if err != nil || len(keys) != i+1 {
				t.Fatalf("EachKV after %d SETNX: %d keys, %v; want %d", i, len(keys), err, i+1)
			}
		}
	}
	if h.f.Commits() != 4 || h.f.DurableIndex() != 40 {
		t.Fatalf("%d commits, durable index %d; want 4 (one per scan), 40", h.f.Commits(), h.f.DurableIndex())
	}
	for i := 0; i < 100; i++ {
		h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprint("u", i)), Value: []byte("v")}))
		if _, err := h.f.KV([]byte(fmt.Sprint("u", i)), h.now()); err != nil {
			t.Fatalf("KV(u%d) right after its apply: %v", i, err)
		}
	}
	if h.f.Commits() != 4 || h.f.DurableIndex() != 40 || h.f.AppliedIndex() != 140 {
		t.Fatalf("after 100 applies read by key: %d commits, durable %d, applied %d; want 4, 40, 140",
			h.f.Commits(), h.f.DurableIndex(), h.f.AppliedIndex())
	}
}

// TestAmortisedCommitEvery: the transaction commits once CommitEvery
// entries are in it, with the applied index of its last one.
func TestAmortisedCommitEvery(t *testing.T) {
	h := amortised(t, filepath.Join(t.TempDir(), "fsm.db"), 10, time.Minute)
	for i := 0; i < 25; i++ {
		h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprint("k", i)), Value: []byte("v")}))
	}
	if h.f.Commits() != 2 || h.f.DurableIndex() != 20 || h.f.AppliedIndex() != 25 {
		t.Fatalf("%d commits, durable %d, applied %d; want 2, 20, 25", h.f.Commits(), h.f.DurableIndex(), h.f.AppliedIndex())
	}
}

// TestAmortisedIntervalCommits: an entry nobody reads is committed
// CommitInterval after it was applied.
func TestAmortisedIntervalCommits(t *testing.T) {
	h := amortised(t, filepath.Join(t.TempDir(), "fsm.db"), 1<<20, 20*time.Millisecond)
	h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte("k"), Value: []byte("v")}))
	for i := 0; i < 1000 && h.f.DurableIndex() != 1; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if h.f.DurableIndex() != 1 {
		t.Fatalf("durable index %d 10s after the apply, want 1", h.f.DurableIndex())
	}
}

// TestAmortisedCrashReplays: the data file as a crash leaves it while a
// transaction is open (a copy of it then: bbolt writes only when it
// commits) holds the state at its applied index; applying the whole log
// to it again, as Raft hands it over after a restart, skips what it holds
// and gives the state of the replica that never stopped, every request
// id applied once.
func TestAmortisedCrashReplays(t *testing.T) {
	dir := t.TempDir()
	h := amortised(t, filepath.Join(dir, "fsm.db"), 1<<20, time.Minute)
	var logs []*raft.Log
	incr := func(id byte) {
		c := command.KVIncrCommand([]byte("ctr"), 1)
		c.ReqID = reqID(id)
		logs = append(logs, h.log(*c))
	}
	next := 0 // the first log not yet handed over
	for i := 0; i < 60; i++ {
		incr(byte(i))
		logs = append(logs, h.log(*command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprint("k", i)), Value: []byte("v"), Mode: command.SetNX})))
		if i%7 == 3 {
			incr(byte(i - 2)) // a retry of an earlier request
		}
		h.f.ApplyBatch(logs[next:])
		next = len(logs)
		if i == 29 {
			if _, err := h.f.DataHash(); err != nil { // commits
				t.Fatal(err)
			}
		}
	}
	durable := h.f.DurableIndex()
	if durable == 0 || durable >= h.f.AppliedIndex() {
		t.Fatalf("durable %d, applied %d: want a transaction open over committed entries", durable, h.f.AppliedIndex())
	}
	crashed := filepath.Join(dir, "crashed.db")
	for _, suffix := range []string{"", bootSuffix} { // the boot marker: a crash of the process, not of the machine
		data, err := os.ReadFile(filepath.Join(dir, "fsm.db"+suffix))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(crashed+suffix, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := amortised(t, crashed, 1<<20, time.Minute)
	if c.f.AppliedIndex() != durable {
		t.Fatalf("crashed file's applied index = %d, want %d", c.f.AppliedIndex(), durable)
	}
	for i := 0; i < len(logs); i += 16 {
		c.f.ApplyBatch(logs[i:min(i+16, len(logs))])
	}
	if e, err := h.f.KV([]byte("ctr"), h.now()); err != nil || string(e.Value) != "60" {
		t.Fatalf("counter = %q, %v; want 60 (each request once)", e.Value, err)
	}
	if e, err := c.f.KV([]byte("ctr"), h.now()); err != nil || string(e.Value) != "60" {
		t.Fatalf("counter after replay = %q, %v; want 60 (each request once)", e.Value, err)
	}
	if a, b := snapshotBytes(t, h.f), snapshotBytes(t, c.f); !bytes.Equal(a, b) {
		t.Fatal("the replayed replica's state differs from the one that never stopped")
	}
}

// TestAmortisedSnapshotCloseRestore: what is open is committed before a
// snapshot (taken at the applied index), a Close and a Restore, and a
// write transaction of another kind waits for nothing.
func TestAmortisedSnapshotCloseRestore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "fsm.db")
	h := amortised(t, path, 1<<20, time.Minute)
	for i := 0; i < 5; i++ {
		h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprint("k", i)), Value: []byte("v")}))
	}
	snap := snapshotBytes(t, h.f)
	if applied, err := SnapshotAppliedIndex(bytes.NewReader(snap)); err != nil || applied != 5 {
		t.Fatalf("snapshot's applied index = %d, %v; want 5", applied, err)
	}
	h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte("k5"), Value: []byte("v")}))
	if err := h.f.ClearClusterID(); err != nil {
		t.Fatal(err)
	}
	h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte("k6"), Value: []byte("v")}))
	if err := h.f.Close(); err != nil {
		t.Fatal(err)
	}
	r := amortised(t, path, 1<<20, time.Minute)
	if r.f.AppliedIndex() != 7 {
		t.Fatalf("applied index after Close and Open = %d, want 7", r.f.AppliedIndex())
	}
	r.index = 7
	r.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte("k7"), Value: []byte("v")}))
	if err := r.f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	if r.f.AppliedIndex() != 5 {
		t.Fatalf("applied index after Restore = %d, want the snapshot's 5", r.f.AppliedIndex())
	}
	if _, err := r.f.KV([]byte("k7"), r.now()); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("KV(k7) after Restore = %v, want not found", err)
	}
}
