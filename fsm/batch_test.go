package fsm

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/idemgate/idemgate/command"
)

// batch is one log entry of the commands cs, stamped with the harness clock.
func (h *harness) batch(cs ...command.Command) *raft.Log {
	h.index++
	enc := make([][]byte, len(cs))
	for i, c := range cs {
		c.Stamp = h.clock
		enc[i] = c.Encode(nil)
	}
	return &raft.Log{Index: h.index, Term: 1, Type: raft.LogCommand, Data: EncodeBatch(enc)}
}

func (h *harness) applyBatch(cs ...command.Command) Results {
	h.t.Helper()
	r, ok := h.f.Apply(h.batch(cs...)).(Results)
	if !ok || len(r) != len(cs) {
		h.t.Fatalf("a batch of %d answered %T (%v)", len(cs), r, r)
	}
	return r
}

// TestBatchRevisions: the commands of a batch apply in order, each with a
// revision of its own, so a compare-and-set or a fencing token can tell two
// writes of one entry apart; entries of one command keep their index.
func TestBatchRevisions(t *testing.T) {
	h := newHarness(t)
	k := []byte("k")
	if r := h.apply(command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("a")}); r.Version != 1 {
		t.Fatalf("a one-command entry's version = %d, want its index 1", r.Version)
	}
	rs := h.applyBatch(
		command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("b")},
		command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("c"), Mode: command.SetCAS, Version: 1}, // 1 moved on: refused
		command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("c")},
		command.Command{Type: command.TypeRecordBegin, Key: command.RecordKey("pay", "", "x"), Value: make([]byte, 32), TTL: time.Hour},
	)
	if rs[0].Version != 2 || rs[1].Code != command.CodeVersionMismatch || rs[1].Version != 2 || rs[2].Version != 4 || rs[3].Fence != 5 {
		t.Fatalf("batch at index 2: versions %d, %v (%d), %d, fence %d; want 2, code 5 (2), 4, fence 5",
			rs[0].Version, rs[1].Code, rs[1].Version, rs[2].Version, rs[3].Fence)
	}
	// The next entries' revisions continue above the batch's until the
	// indexes catch up.
	if r := h.apply(command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("d")}); r.Version != 6 {
		t.Fatalf("the entry after the batch (index 3): version %d, want 6", r.Version)
	}
	h.index = 100
	if r := h.apply(command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("e")}); r.Version != 101 {
		t.Fatalf("entry 101: version %d, want its index", r.Version)
	}
	e, err := h.f.KV(k, h.now())
	if err != nil || string(e.Value) != "e" || e.Version != 101 || e.Created != 1 {
		t.Fatalf("stored %+v %v", e, err)
	}
}

// TestBatchDuplicateRequestID: a retry packed into the same batch as its
// first attempt (a follower's retry racing the original) is applied once
// and answered with the first attempt's result.
func TestBatchDuplicateRequestID(t *testing.T) {
	h := newHarness(t)
	c := command.Command{Type: command.TypeTokenConsume, Key: []byte("t1"), ReqID: reqID(1)}
	h.apply(command.Command{Type: command.TypeTokenIssue, Key: []byte("t1"), TTL: time.Hour})
	rs := h.applyBatch(c, c, command.Command{Type: command.TypeTokenConsume, Key: []byte("t1"), ReqID: reqID(2)})
	if rs[0].Code != command.CodeOK || !bytes.Equal(rs[0].Encode(nil), rs[1].Encode(nil)) {
		t.Fatalf("first and retried consume: %v, %v; want ok twice", rs[0].Code, rs[1].Code)
	}
	if rs[2].Code == command.CodeOK {
		t.Fatal("a second consume (another request id) of the same token succeeded")
	}
}

// TestBatchMalformed: a damaged batch entry is one bad command: nothing of
// it is applied, the entry still counts as applied, and the state machine
// goes on.
func TestBatchMalformed(t *testing.T) {
	good := (&command.Command{Type: command.TypeKVSet, Key: []byte("k"), Value: []byte("v")}).Encode(nil)
	valid := EncodeBatch([][]byte{good, good})
	huge := append([]byte{batchEnvelope}, binary.AppendUvarint(nil, MaxBatchCommands+1)...)
	cases := map[string][]byte{
		"no count":         {batchEnvelope},
		"zero commands":    {batchEnvelope, 0},
		"over the bound":   huge,
		"truncated":        valid[:len(valid)-3],
		"trailing bytes":   append(append([]byte(nil), valid...), 9),
		"length past end":  append([]byte{batchEnvelope, 1, 200}, good...),
		"garbage commands": EncodeBatch([][]byte{{1, 2, 3}, good}),
	}
	for name, data := range cases {
		h := newHarness(t)
		h.index++
		out := h.f.Apply(&raft.Log{Index: h.index, Type: raft.LogCommand, Data: data})
		switch r := out.(type) {
		case *command.Result:
			if r.Code != command.CodeBadCommand {
				t.Errorf("%s: %v, want bad_command", name, r.Code)
			}
			if _, err := h.f.KV([]byte("k"), h.now()); err == nil {
				t.Errorf("%s: part of a damaged batch was applied", name)
			}
		case Results: // well-formed, with a bad command inside: that one alone is refused
			if name != "garbage commands" || r[0].Code != command.CodeBadCommand || r[1].Code != command.CodeCreated {
				t.Errorf("%s: %v", name, r)
			}
		default:
			t.Errorf("%s: answered %T", name, out)
		}
		if h.f.AppliedIndex() != h.index {
			t.Errorf("%s: applied index %d, want %d", name, h.f.AppliedIndex(), h.index)
		}
	}
}

// TestBatchReadsItsOwnWrites: a batch's reads go through one cursor per
// bucket (applier.cursor), repositioned for every read, so a command sees
// what the commands before it in the same entry wrote, removed or
// remembered: keys (among many, so the tree has branches), records, and a
// request id's answer.
func TestBatchReadsItsOwnWrites(t *testing.T) {
	h := newHarness(t)
	var fill []command.Command
	for i := 0; i < 2000; i++ {
		fill = append(fill, command.Command{Type: command.TypeKVSet, Key: binary.BigEndian.AppendUint32([]byte("fill-"), uint32(i)), Value: bytes.Repeat([]byte{'f'}, 100)})
	}
	h.applyBatch(fill...)
	k, rk := []byte("fill-m"), command.RecordKey("pay", "", "x")
	var id command.ReqID
	id[0], id[15] = 7, 1
	rs := h.applyBatch(
		command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("v1"), Mode: command.SetNX},
		command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("v2"), Mode: command.SetNX}, // sees v1
		command.Command{Type: command.TypeKVGetDel, Key: k},                                        // removes v1
		command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("v3"), Mode: command.SetNX}, // sees it gone
		command.Command{Type: command.TypeRecordBegin, Key: rk, Value: make([]byte, 32), TTL: time.Hour, Timeout: time.Minute},
		command.Command{Type: command.TypeRecordBegin, Key: rk, Value: make([]byte, 32), TTL: time.Hour, Timeout: time.Minute}, // sees the first
		command.Command{Type: command.TypeKVSet, Key: []byte("once"), Value: []byte("a"), Mode: command.SetNX, ReqID: id},
		command.Command{Type: command.TypeKVSet, Key: []byte("once"), Value: []byte("a"), Mode: command.SetNX, ReqID: id}, // a retry: its answer remembered
	)
	want := []command.Code{command.CodeCreated, command.CodeExists, command.CodeOK, command.CodeCreated, command.CodeCreated, command.CodeExists, command.CodeCreated, command.CodeCreated}
	for i, r := range rs {
		if r.Code != want[i] {
			t.Errorf("command %d answered %v, want %v", i, r.Code, want[i])
		}
	}
	if string(rs[1].Value) != "v1" || string(rs[2].Value) != "v1" {
		t.Errorf("the second SETNX saw %q and GETDEL removed %q, want v1 both", rs[1].Value, rs[2].Value)
	}
	if rs[7].Version != rs[6].Version {
		t.Errorf("the retry answered version %d, the first attempt %d: applied twice", rs[7].Version, rs[6].Version)
	}
	e, err := h.f.KV(k, h.now())
	if err != nil || string(e.Value) != "v3" {
		t.Fatalf("after the batch %s = %q (%v), want v3", k, e.Value, err)
	}
}
