package fsm

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// harness feeds commands to an FSM with increasing indexes and a clock the
// test moves.
type harness struct {
	t     *testing.T
	f     *FSM
	index uint64
	clock int64
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	f, err := Open(Config{Path: filepath.Join(t.TempDir(), "fsm.db"), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &harness{t: t, f: f, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()}
}

func (h *harness) advance(d time.Duration) { h.clock += int64(d) }

func (h *harness) log(c command.Command) *raft.Log {
	h.index++
	c.Stamp = h.clock
	return &raft.Log{Index: h.index, Term: 1, Type: raft.LogCommand, Data: c.Encode(nil)}
}

func (h *harness) apply(c command.Command) *command.Result {
	h.t.Helper()
	r, ok := h.f.Apply(h.log(c)).(*command.Result)
	if !ok {
		h.t.Fatalf("Apply(%s) returned %T", c.Type, r)
	}
	return r
}

func (h *harness) now() time.Time { return time.Unix(0, h.clock) }

func reqID(b byte) command.ReqID { return command.ReqID{0: 0xAA, 15: b} }

func TestCommands(t *testing.T) {
	k := []byte("k")
	tests := []struct {
		name  string
		steps []step
	}{
		{"setnx creates then conflicts", []step{
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("a"), Mode: command.SetNX}, code: command.CodeCreated},
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("b"), Mode: command.SetNX}, code: command.CodeExists, value: "a"},
		}},
		{"compare-and-delete refuses another version", []step{
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("a")}, code: command.CodeCreated},
			{cmd: command.Command{Type: command.TypeKVGetDel, Key: k, Version: 99}, code: command.CodeVersionMismatch},
			{cmd: command.Command{Type: command.TypeKVGetDel, Key: k, Version: 1}, code: command.CodeOK, value: "a"},
			{cmd: command.Command{Type: command.TypeKVGetDel, Key: k, Version: 1}, code: command.CodeNotFound},
		}},
		{"plain set overwrites", []step{
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("a")}, code: command.CodeCreated},
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("b")}, code: command.CodeOK},
			{cmd: command.Command{Type: command.TypeKVGetDel, Key: k}, code: command.CodeOK, value: "b"},
		}},
		{"getdel once", []step{
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("v")}, code: command.CodeCreated},
			{cmd: command.Command{Type: command.TypeKVGetDel, Key: k}, code: command.CodeOK, value: "v"},
			{cmd: command.Command{Type: command.TypeKVGetDel, Key: k}, code: command.CodeNotFound},
		}},
		{"delete", []step{
			{cmd: command.Command{Type: command.TypeKVDelete, Key: k}, code: command.CodeNotFound},
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("v")}, code: command.CodeCreated},
			{cmd: command.Command{Type: command.TypeKVDelete, Key: k}, code: command.CodeOK},
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("w"), Mode: command.SetNX}, code: command.CodeCreated},
		}},
		{"cas on version", []step{
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("a"), Mode: command.SetCAS, Version: 0}, code: command.CodeCreated}, // index 1
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("b"), Mode: command.SetCAS, Version: 0}, code: command.CodeVersionMismatch},
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("b"), Mode: command.SetCAS, Version: 7}, code: command.CodeVersionMismatch},
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("b"), Mode: command.SetCAS, Version: 1}, code: command.CodeOK},
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("c"), Mode: command.SetCAS, Version: 1}, code: command.CodeVersionMismatch},
			{cmd: command.Command{Type: command.TypeKVGetDel, Key: k}, code: command.CodeOK, value: "b"},
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("d"), Mode: command.SetCAS, Version: 4}, code: command.CodeVersionMismatch},
		}},
		{"kv ttl edge: alive one ns before, gone at expiry", []step{
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("a"), TTL: time.Second}, code: command.CodeCreated},
			{advance: time.Second - 1, cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("b"), Mode: command.SetNX}, code: command.CodeExists},
			{advance: 1, cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("b"), Mode: command.SetNX}, code: command.CodeCreated},
		}},
		{"plain set without ttl clears the ttl", []step{
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("a"), TTL: time.Second}, code: command.CodeCreated},
			{cmd: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("b")}, code: command.CodeOK},
			{advance: time.Hour, cmd: command.Command{Type: command.TypeKVGetDel, Key: k}, code: command.CodeOK, value: "b"},
		}},
		{"token issue consume once", []step{
			{cmd: command.Command{Type: command.TypeTokenIssue, Key: command.TokenKey("pay", "t1"), TTL: time.Minute}, code: command.CodeCreated},
			{cmd: command.Command{Type: command.TypeTokenIssue, Key: command.TokenKey("pay", "t1"), TTL: time.Minute}, code: command.CodeExists},
			{cmd: command.Command{Type: command.TypeTokenConsume, Key: command.TokenKey("other", "t1")}, code: command.CodeNotFound},
			{cmd: command.Command{Type: command.TypeTokenConsume, Key: command.TokenKey("pay", "t1")}, code: command.CodeOK},
			{cmd: command.Command{Type: command.TypeTokenConsume, Key: command.TokenKey("pay", "t1")}, code: command.CodeNotFound},
		}},
		{"token expires exactly at its ttl", []step{
			{cmd: command.Command{Type: command.TypeTokenIssue, Key: command.TokenKey("pay", "t"), TTL: time.Minute}, code: command.CodeCreated},
			{advance: time.Minute, cmd: command.Command{Type: command.TypeTokenConsume, Key: command.TokenKey("pay", "t")}, code: command.CodeNotFound},
		}},
		{"begin owns, duplicate sees in flight", []step{
			{cmd: command.Command{Type: command.TypeRecordBegin, Key: k, Value: []byte("fp"), TTL: time.Hour, Timeout: time.Minute}, code: command.CodeCreated, fence: 1},
			{cmd: command.Command{Type: command.TypeRecordBegin, Key: k, Value: []byte("fp"), TTL: time.Hour}, code: command.CodeExists, state: command.StateInFlight, fence: 1},
		}},
		{"complete then replay", []step{
			{cmd: command.Command{Type: command.TypeRecordBegin, Key: k, Value: []byte("fp"), TTL: time.Hour}, code: command.CodeCreated, fence: 1},
			{cmd: command.Command{Type: command.TypeRecordComplete, Key: k, Fence: 1, Status: 201, Body: []byte("ok"),
				Headers: []command.Header{{Name: []byte("Content-Type"), Value: []byte("text/plain")}}}, code: command.CodeOK},
			{cmd: command.Command{Type: command.TypeRecordBegin, Key: k, Value: []byte("fp")}, code: command.CodeExists, state: command.StateCompleted, status: 201, body: "ok"},
			{cmd: command.Command{Type: command.TypeRecordComplete, Key: k, Fence: 1, Status: 200}, code: command.CodeWrongState},
		}},
		{"fencing: stale owner cannot complete or release", []step{
			{cmd: command.Command{Type: command.TypeRecordBegin, Key: k, TTL: time.Hour, Timeout: time.Second, Flags: command.FlagReleaseUnknown}, code: command.CodeCreated, fence: 1},
			{advance: time.Second, cmd: command.Command{Type: command.TypeRecordBegin, Key: k, TTL: time.Hour, Flags: command.FlagReleaseUnknown}, code: command.CodeCreated, fence: 2},
			{cmd: command.Command{Type: command.TypeRecordComplete, Key: k, Fence: 1, Status: 200}, code: command.CodeFenceMismatch},
			{cmd: command.Command{Type: command.TypeRecordRelease, Key: k, Fence: 1}, code: command.CodeFenceMismatch},
			{cmd: command.Command{Type: command.TypeRecordComplete, Key: k, Fence: 2, Status: 200}, code: command.CodeOK},
		}},
		{"processing deadline: reject policy reports unknown", []step{
			{cmd: command.Command{Type: command.TypeRecordBegin, Key: k, TTL: time.Hour, Timeout: time.Second}, code: command.CodeCreated, fence: 1},
			{advance: time.Second - 1, cmd: command.Command{Type: command.TypeRecordBegin, Key: k}, code: command.CodeExists, state: command.StateInFlight},
			{advance: 1, cmd: command.Command{Type: command.TypeRecordBegin, Key: k}, code: command.CodeExists, state: command.StateUnknown},
			{cmd: command.Command{Type: command.TypeRecordComplete, Key: k, Fence: 1, Status: 200}, code: command.CodeOK}, // late owner still completes
			{cmd: command.Command{Type: command.TypeRecordBegin, Key: k}, code: command.CodeExists, state: command.StateCompleted, status: 200},
		}},
		{"release lets the next begin run", []step{
			{cmd: command.Command{Type: command.TypeRecordBegin, Key: k, TTL: time.Hour}, code: command.CodeCreated, fence: 1},
			{cmd: command.Command{Type: command.TypeRecordRelease, Key: k, Fence: 1}, code: command.CodeOK},
			{cmd: command.Command{Type: command.TypeRecordBegin, Key: k, TTL: time.Hour}, code: command.CodeCreated, fence: 3},
			{cmd: command.Command{Type: command.TypeRecordComplete, Key: k, Fence: 3, Status: 200}, code: command.CodeOK},
			{cmd: command.Command{Type: command.TypeRecordRelease, Key: k, Fence: 3}, code: command.CodeWrongState},
			{cmd: command.Command{Type: command.TypeRecordRelease, Key: k}, code: command.CodeOK}, // by hand
			{cmd: command.Command{Type: command.TypeRecordRelease, Key: k}, code: command.CodeNotFound},
		}},
		{"record ttl edge", []step{
			{cmd: command.Command{Type: command.TypeRecordBegin, Key: k, TTL: time.Minute}, code: command.CodeCreated, fence: 1},
			{cmd: command.Command{Type: command.TypeRecordComplete, Key: k, Fence: 1, Status: 200}, code: command.CodeOK},
			{advance: time.Minute - 1, cmd: command.Command{Type: command.TypeRecordBegin, Key: k, TTL: time.Minute}, code: command.CodeExists, state: command.StateCompleted},
			{advance: 1, cmd: command.Command{Type: command.TypeRecordBegin, Key: k, TTL: time.Minute}, code: command.CodeCreated, fence: 4},
		}},
		{"complete of a missing record", []step{
			{cmd: command.Command{Type: command.TypeRecordComplete, Key: k, Fence: 9, Status: 200}, code: command.CodeNotFound},
		}},
		{"noop", []step{
			{cmd: command.Command{Type: command.TypeNoop, Value: bytes.Repeat([]byte{1}, 64)}, code: command.CodeOK},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			for i, s := range tt.steps {
				h.advance(s.advance)
				r := h.apply(s.cmd)
				s.check(t, i, r)
			}
		})
	}
}

type step struct {
	advance time.Duration
	cmd     command.Command
	code    command.Code
	value   string
	fence   uint64
	state   command.State
	status  int
	body    string
}

func (s step) check(t *testing.T, i int, r *command.Result) {
	t.Helper()
	if r.Code != s.code {
		t.Fatalf("step %d %s: code = %d (%v), want %d", i, s.cmd.Type, r.Code, r.Err(), s.code)
	}
	if s.value != "" && string(r.Value) != s.value {
		t.Fatalf("step %d %s: value = %q, want %q", i, s.cmd.Type, r.Value, s.value)
	}
	if s.fence != 0 && r.Fence != s.fence {
		t.Fatalf("step %d %s: fence = %d, want %d", i, s.cmd.Type, r.Fence, s.fence)
	}
	if s.state != 0 {
		if r.Record == nil {
			t.Fatalf("step %d %s: no record in result", i, s.cmd.Type)
		}
		if r.Record.State != s.state {
			t.Fatalf("step %d %s: state = %s, want %s", i, s.cmd.Type, r.Record.State, s.state)
		}
	}
	if s.status != 0 && (r.Record == nil || r.Record.Status != s.status) {
		t.Fatalf("step %d %s: record status wrong: %+v", i, s.cmd.Type, r.Record)
	}
	if s.body != "" && (r.Record == nil || string(r.Record.Body) != s.body) {
		t.Fatalf("step %d %s: record body wrong: %+v", i, s.cmd.Type, r.Record)
	}
}

func TestRequestIDAppliesOnce(t *testing.T) {
	h := newHarness(t)
	getdel := command.Command{Type: command.TypeKVGetDel, Key: []byte("k"), ReqID: reqID(1)}
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("k"), Value: []byte("v")})
	first := h.apply(getdel)
	retry := h.apply(getdel) // a retry after a cut connection
	if first.Code != command.CodeOK || retry.Code != command.CodeOK || string(retry.Value) != "v" {
		t.Fatalf("GETDEL retried with one request id: first %+v, retry %+v; want both OK with value v", first, retry)
	}
	// A begin retried by its owner must say "you own it", not "in flight".
	begin := command.Command{Type: command.TypeRecordBegin, Key: []byte("r"), TTL: time.Hour, ReqID: reqID(2)}
	a, b := h.apply(begin), h.apply(begin)
	if a.Code != command.CodeCreated || b.Code != command.CodeCreated || a.Fence != b.Fence {
		t.Fatalf("begin retry: %+v then %+v, want the same owner twice", a, b)
	}
	// A begin that found an existing record is re-read on retry.
	other := command.Command{Type: command.TypeRecordBegin, Key: []byte("r"), ReqID: reqID(3)}
	if r := h.apply(other); r.Code != command.CodeExists || r.Record.State != command.StateInFlight {
		t.Fatalf("begin of owned key = %+v", r)
	}
	h.apply(command.Command{Type: command.TypeRecordComplete, Key: []byte("r"), Fence: a.Fence, Status: 200, Body: []byte("x")})
	if r := h.apply(other); r.Code != command.CodeExists || r.Record.State != command.StateCompleted || string(r.Record.Body) != "x" {
		t.Fatalf("retried begin after completion = %+v, want the completed record", r)
	}
	// Remembered for at least the retention, forgotten before twice it.
	h.advance(RequestIDRetention - time.Second)
	if r := h.apply(getdel); r.Code != command.CodeOK || string(r.Value) != "v" {
		t.Fatalf("GETDEL retried within the retention = %+v, want the first result", r)
	}
	h.advance(RequestIDRetention + 2*time.Second)
	h.apply(command.Command{Type: command.TypeNoop})
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("k"), Value: []byte("w")})
	if r := h.apply(getdel); r.Code != command.CodeOK || string(r.Value) != "w" {
		t.Fatalf("GETDEL with an id older than the retention = %+v, want a fresh apply", r)
	}
}

// restartAndReplay applies SET k then GETDEL k, closes and reopens the
// state machine, and replays both entries as Raft does after a restart
// (from its last snapshot). The entries carry no request ids.
func restartAndReplay(t *testing.T) (*FSM, []interface{}) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fsm.db")
	f, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, f: f, clock: 1}
	set := h.log(command.Command{Type: command.TypeKVSet, Key: []byte("k"), Value: []byte("v")})
	getdel := h.log(command.Command{Type: command.TypeKVGetDel, Key: []byte("k")})
	f.ApplyBatch([]*raft.Log{set, getdel})
	f.Close()
	if f, err = Open(Config{Path: path}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if got := f.AppliedIndex(); got != 2 {
		t.Fatalf("AppliedIndex after reopen = %d, want 2", got)
	}
	return f, f.ApplyBatch([]*raft.Log{set, getdel})
}

func TestAppliedIndexSkipAfterRestart(t *testing.T) {
	f, out := restartAndReplay(t)
	if out[0] != nil || out[1] != nil {
		t.Fatalf("replayed entries were applied again: %v", out)
	}
	if _, err := f.KV([]byte("k"), time.Unix(0, 1)); !errors.Is(err, command.ErrNotFound) {
		t.Fatalf("KV(k) after replay = %v, want ErrNotFound", err)
	}
}

func TestBadCommandIsAResult(t *testing.T) {
	h := newHarness(t)
	h.index++
	r := h.f.Apply(&raft.Log{Index: h.index, Type: raft.LogCommand, Data: []byte("garbage")}).(*command.Result)
	if !errors.Is(r.Err(), command.ErrBadCommand) {
		t.Fatalf("Apply(garbage) = %v, want ErrBadCommand", r.Err())
	}
	if h.f.AppliedIndex() != 1 {
		t.Fatalf("applied index = %d, want 1", h.f.AppliedIndex())
	}
}

func TestSweepExpires(t *testing.T) {
	h := newHarness(t)
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("a"), Value: []byte("1"), TTL: time.Second})
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("b"), Value: []byte("2"), TTL: time.Hour})
	h.apply(command.Command{Type: command.TypeTokenIssue, Key: command.TokenKey("s", "t"), TTL: time.Second})
	h.apply(command.Command{Type: command.TypeRecordBegin, Key: []byte("r"), TTL: time.Second})
	h.advance(2 * time.Second)
	// Invisible to reads before the sweeper removes them.
	if _, err := h.f.KV([]byte("a"), h.now()); !errors.Is(err, command.ErrNotFound) {
		t.Fatalf("expired KV read = %v, want ErrNotFound", err)
	}
	if _, err := h.f.Record([]byte("r"), h.now()); !errors.Is(err, command.ErrNotFound) {
		t.Fatalf("expired record read = %v", err)
	}
	due, err := h.f.Due(h.now(), 100)
	if err != nil || len(due) != 3 {
		t.Fatalf("Due = %v, %v; want 3 entries", due, err)
	}
	// An entry rewritten after the sweep was read keeps its new life.
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("a"), Value: []byte("new"), TTL: time.Hour})
	if r := h.apply(command.Command{Type: command.TypeExpire, Entries: due}); r.Code != command.CodeOK {
		t.Fatalf("expire = %+v", r)
	}
	if e, err := h.f.KV([]byte("a"), h.now()); err != nil || string(e.Value) != "new" {
		t.Fatalf("rewritten key after sweep = %q, %v", e.Value, err)
	}
	if due, _ := h.f.Due(h.now(), 100); len(due) != 0 {
		t.Fatalf("index after sweep still has %v", due)
	}
	if got := h.f.ExpiredCount(ttl.KindToken) + h.f.ExpiredCount(ttl.KindRecord); got != 2 {
		t.Fatalf("expired counts = %d, want 2", got)
	}
	// Not yet due at the state machine's clock: nothing happens.
	kvBefore := h.f.ExpiredCount(ttl.KindKV)
	h.apply(command.Command{Type: command.TypeExpire, Entries: []ttl.Entry{{Kind: ttl.KindKV, Key: []byte("b"), At: h.clock + int64(time.Hour)}}})
	if e, err := h.f.KV([]byte("b"), h.now()); err != nil || string(e.Value) != "2" || h.f.ExpiredCount(ttl.KindKV) != kvBefore {
		t.Fatalf("an expire before its time removed b: %q, %v", e.Value, err)
	}
}

func TestClockNeverGoesBack(t *testing.T) {
	h := newHarness(t)
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("k"), Value: []byte("v"), TTL: time.Second})
	h.advance(2 * time.Second)
	h.apply(command.Command{Type: command.TypeNoop})
	h.advance(-10 * time.Second) // a new leader whose clock is behind
	if r := h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("k"), Value: []byte("w"), Mode: command.SetNX}); r.Code != command.CodeCreated {
		t.Fatalf("SETNX after expiry under a lagging leader clock = %+v, want created", r)
	}
}

func TestRecordCounts(t *testing.T) {
	h := newHarness(t)
	h.apply(command.Command{Type: command.TypeRecordBegin, Key: []byte("a")})
	h.apply(command.Command{Type: command.TypeRecordBegin, Key: []byte("b")})
	h.apply(command.Command{Type: command.TypeRecordComplete, Key: []byte("a"), Fence: 1, Status: 200})
	if h.f.RecordCount(command.StateInFlight) != 1 || h.f.RecordCount(command.StateCompleted) != 1 {
		t.Fatalf("counts: in flight %d, completed %d", h.f.RecordCount(command.StateInFlight), h.f.RecordCount(command.StateCompleted))
	}
}

// pipe turns a snapshot into a reader, as raft's snapshot store would.
type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { return nil }

func snapshotBytes(t *testing.T, f *FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	return sink.Bytes()
}

func TestRestoreDiscardsState(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	a.apply(command.Command{Type: command.TypeKVSet, Key: []byte("x"), Value: []byte("1")})
	b.apply(command.Command{Type: command.TypeKVSet, Key: []byte("y"), Value: []byte("2")})
	b.apply(command.Command{Type: command.TypeKVSet, Key: []byte("z"), Value: []byte("2")})
	if err := b.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, a.f)))); err != nil {
		t.Fatal(err)
	}
	if _, err := b.f.KV([]byte("y"), b.now()); !errors.Is(err, command.ErrNotFound) {
		t.Fatalf("key from before the restore survived: %v", err)
	}
	if e, err := b.f.KV([]byte("x"), b.now()); err != nil || string(e.Value) != "1" {
		t.Fatalf("restored key = %q, %v", e.Value, err)
	}
	if b.f.AppliedIndex() != 1 {
		t.Fatalf("applied index after restore = %d, want the snapshot's 1", b.f.AppliedIndex())
	}
	if err := b.f.Restore(io.NopCloser(bytes.NewReader([]byte("not a bolt file at all")))); err == nil {
		t.Fatal("Restore(garbage) succeeded")
	}
	if e, err := b.f.KV([]byte("x"), b.now()); err != nil || string(e.Value) != "1" {
		t.Fatalf("a failed restore damaged the state: %q, %v", e.Value, err)
	}
}

func TestSuspectedDuplicates(t *testing.T) {
	h := newHarness(t)
	digest := command.DigestKey("pay", "u1", []byte("sha-of-body"))
	window := 5 * time.Minute
	begin := func(key string, flags byte) *command.Result {
		return h.apply(command.Command{Type: command.TypeRecordBegin, Key: command.RecordKey("pay", "u1", key), TTL: time.Hour,
			DigestKey: digest, Window: window, Flags: flags})
	}
	if r := begin("k1", 0); r.Code != command.CodeCreated || r.Suspect != nil {
		t.Fatalf("first begin = %+v", r)
	}
	if r := begin("k1", 0); r.Code != command.CodeExists || r.Suspect != nil {
		t.Fatalf("same key again = %+v, want exists and no suspicion", r)
	}
	r := begin("k2", 0)
	if r.Code != command.CodeCreated || string(r.Suspect) != string(command.RecordKey("pay", "u1", "k1")) {
		t.Fatalf("same body under a new key = %+v, want created and flagged against k1", r)
	}
	if r := begin("k3", command.FlagRejectSuspect); r.Code != command.CodeSuspect || !errors.Is(r.Err(), command.ErrSuspect) {
		t.Fatalf("reject policy = %+v, want CodeSuspect", r)
	}
	if _, err := h.f.Record(command.RecordKey("pay", "u1", "k3"), h.now()); !errors.Is(err, command.ErrNotFound) {
		t.Fatalf("a refused suspect left a record: %v", err)
	}
	// Another tenant with the same body is not a suspect.
	other := h.apply(command.Command{Type: command.TypeRecordBegin, Key: command.RecordKey("pay", "u2", "k1"), DigestKey: command.DigestKey("pay", "u2", []byte("sha-of-body")), Window: window})
	if other.Suspect != nil {
		t.Fatalf("other tenant flagged: %+v", other)
	}
	// After the window, the same body under a new key is fine.
	h.advance(6 * time.Minute)
	if r := begin("k4", command.FlagRejectSuspect); r.Code != command.CodeCreated || r.Suspect != nil {
		t.Fatalf("after the window = %+v", r)
	}
	log, err := h.f.Suspects(10)
	if err != nil || len(log) != 2 {
		t.Fatalf("suspect log = %+v, %v; want 2 entries", log, err)
	}
	if string(log[0].Key) != string(command.RecordKey("pay", "u1", "k3")) || string(log[1].Earlier) != string(command.RecordKey("pay", "u1", "k1")) {
		t.Fatalf("suspect log order/content wrong: %+v", log)
	}
}

func TestRecordObserverSeesRemovals(t *testing.T) {
	h := newHarness(t)
	var removed []string
	h.f.SetRecordObserver(func(keys [][]byte) {
		for _, k := range keys {
			removed = append(removed, string(k))
		}
	})
	h.apply(command.Command{Type: command.TypeRecordBegin, Key: []byte("a"), TTL: time.Second})
	h.apply(command.Command{Type: command.TypeRecordComplete, Key: []byte("a"), Fence: 1, Status: 200})
	h.apply(command.Command{Type: command.TypeRecordBegin, Key: []byte("b"), TTL: time.Hour})
	h.apply(command.Command{Type: command.TypeRecordRelease, Key: []byte("b")})
	if len(removed) != 1 || removed[0] != "b" {
		t.Fatalf("removed after release = %q", removed)
	}
	h.advance(2 * time.Second)
	due, _ := h.f.Due(h.now(), 10)
	h.apply(command.Command{Type: command.TypeExpire, Entries: due})
	if len(removed) != 2 || removed[1] != "a" {
		t.Fatalf("removed after expiry = %q", removed)
	}
}

// TestRestoreWhileASnapshotIsOpen: a restore does not wait for a snapshot
// still being persisted (hashicorp/raft takes one while it installs
// another, and its snapshot goroutine then waits for the goroutine that
// waits for the restore). The open snapshot goes on reading the state it
// captured; the restored state is the snapshot's. Before, Restore closed
// the data file first, and bbolt's Close waits for every read transaction:
// this test hung.
func TestRestoreWhileASnapshotIsOpen(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	a.apply(command.Command{Type: command.TypeKVSet, Key: []byte("x"), Value: []byte("1")})
	b.apply(command.Command{Type: command.TypeKVSet, Key: []byte("y"), Value: []byte("2")})
	open, err := b.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, a.f)))); err != nil {
		t.Fatal(err)
	}
	if e, err := b.f.KV([]byte("x"), b.now()); err != nil || string(e.Value) != "1" {
		t.Fatalf("restored key = %q, %v", e.Value, err)
	}
	// The snapshot taken before still holds the state it captured.
	c := newHarness(t)
	var sink memSink
	if err := open.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	open.Release()
	if err := c.f.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if e, err := c.f.KV([]byte("y"), c.now()); err != nil || string(e.Value) != "2" {
		t.Fatalf("the open snapshot's state = %q, %v; want y=2", e.Value, err)
	}
}
