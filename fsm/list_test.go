package fsm

import (
	"bytes"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// TestKindInCreated: a string entry is stored as before lists (the kind
// byte zero), a list's kind rides in Created's top byte, and both decode
// to what was encoded.
func TestKindInCreated(t *testing.T) {
	s := command.KVEntry{Version: 7, Created: 3, ExpiresAt: 99, Value: []byte("v")}
	b := encodeKV(&s)
	if want := []byte{0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 3}; !bytes.Equal(b[:16], want) {
		t.Fatalf("a string's header %x, want %x", b[:16], want)
	}
	l := command.KVEntry{Version: 7, Created: 1<<56 - 1, Kind: command.KindList, Value: command.EncodeList([][]byte{[]byte("a")})}
	for _, e := range []command.KVEntry{s, l} {
		got, ok := decodeKV(encodeKV(&e))
		if !ok || got.Version != e.Version || got.Created != e.Created || got.Kind != e.Kind || got.ExpiresAt != e.ExpiresAt || !bytes.Equal(got.Value, e.Value) {
			t.Fatalf("decode(encode(%+v)) = %+v", e, got)
		}
	}
}

// TestListWrongType: every string command that reads or edits a value,
// applied to a list, answers CodeWrongType and leaves the list as it was;
// every list command on a string does the same; the commands that fit
// any kind (DEL, EXPIRE, RENAME, plain SET, SETNX) work on a list.
func TestListWrongType(t *testing.T) {
	h := newHarness(t)
	h.apply(*command.ListPushCommand([]byte("l"), [][]byte{[]byte("a"), []byte("b")}, true, false))
	h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte("s"), Value: []byte("5")}))
	before, _ := h.kv("l")
	before = before.Clone()
	for _, c := range []*command.Command{
		command.KVSetCommand(command.KVSetRequest{Key: []byte("l"), Value: []byte("x"), ReturnOld: true}),
		command.KVSetCommand(command.KVSetRequest{Key: []byte("l"), Value: []byte("x"), Mode: command.SetIfEq, Match: []byte("a")}),
		command.KVGetDelCommand([]byte("l"), 0),
		command.KVDeleteIfCommand([]byte("l"), command.SetIfNe, []byte("x"), 0),
		command.KVIncrCommand([]byte("l"), 1),
		command.KVIncrFloatCommand([]byte("l"), []byte("1")),
		command.KVAppendCommand([]byte("l"), []byte("x"), 1<<20),
		command.KVSetRangeCommand([]byte("l"), 0, []byte("x"), 1<<20),
		command.KVExpireCommand([]byte("l"), time.Hour, command.FlagExpireGet),
		command.ListPushCommand([]byte("s"), [][]byte{[]byte("a")}, false, false),
		command.ListPopCommand([][]byte{[]byte("s")}, false, -1),
		command.ListPopCommand([][]byte{[]byte("none"), []byte("s"), []byte("l")}, false, 1),
		command.ListRemCommand([]byte("s"), []byte("5"), 0),
		command.ListTrimCommand([]byte("s"), 0, 0),
	} {
		if r := h.apply(*c); r.Code != command.CodeWrongType || r.Err() != command.ErrWrongType {
			t.Errorf("%s on the other kind: code %d", c.Type, r.Code)
		}
	}
	if after, _ := h.kv("l"); after.Version != before.Version || !bytes.Equal(after.Value, before.Value) || after.Kind != command.KindList {
		t.Fatalf("the list changed under refused commands: %+v, was %+v", after, before)
	}
	if s, _ := h.kv("s"); string(s.Value) != "5" || s.Kind != command.KindString {
		t.Fatalf("the string changed under refused commands: %+v", s)
	}
	if r := h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte("l"), Value: []byte("x"), Mode: command.SetNX})); r.Code != command.CodeExists || r.Value != nil {
		t.Fatalf("SETNX on a list: code %d value %q, want exists and no value", r.Code, r.Value)
	}
	if r := h.apply(*command.KVExpireCommand([]byte("l"), time.Hour, 0)); r.Code != command.CodeOK {
		t.Fatalf("EXPIRE of a list: code %d", r.Code)
	}
	if r := h.apply(*command.KVRenameCommand([]byte("l"), []byte("m"), command.RenameCopy, false)); r.Code != command.CodeOK {
		t.Fatalf("COPY of a list: code %d", r.Code)
	}
	if m, ok := h.kv("m"); !ok || m.Kind != command.KindList || !bytes.Equal(m.Value, before.Value) {
		t.Fatalf("the copy: %+v", m)
	}
	if r := h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte("l"), Value: []byte("x")})); r.Code != command.CodeOK {
		t.Fatalf("SET over a list: code %d", r.Code)
	}
	if l, _ := h.kv("l"); l.Kind != command.KindString || string(l.Value) != "x" || l.ExpiresAt != 0 {
		t.Fatalf("SET over a list left %+v", l)
	}
}

// TestListBounds: a push past MaxListElems or MaxListBytes is refused
// whole (CodeTooLong) and the list keeps what it held.
func TestListBounds(t *testing.T) {
	h := newHarness(t)
	many := make([][]byte, command.MaxListElems)
	for i := range many {
		many[i] = []byte{byte(i)}
	}
	if r := h.apply(*command.ListPushCommand([]byte("l"), many, true, false)); r.Code != command.CodeCreated || string(r.Value) != "65536" {
		t.Fatalf("a full list: code %d %q", r.Code, r.Value)
	}
	if r := h.apply(*command.ListPushCommand([]byte("l"), many[:1], false, false)); r.Code != command.CodeTooLong {
		t.Fatalf("one past the elements' bound: code %d", r.Code)
	}
	big := bytes.Repeat([]byte("x"), command.MaxListBytes/2)
	if r := h.apply(*command.ListPushCommand([]byte("b"), [][]byte{big}, true, false)); r.Code != command.CodeCreated {
		t.Fatalf("half the bytes: code %d", r.Code)
	}
	if r := h.apply(*command.ListPushCommand([]byte("b"), [][]byte{big}, true, false)); r.Code != command.CodeTooLong {
		t.Fatalf("past the bytes' bound: code %d", r.Code)
	}
	if l, _ := h.kv("l"); len(mustList(t, l.Value)) != command.MaxListElems {
		t.Fatal("the full list changed")
	}
	if b, _ := h.kv("b"); len(mustList(t, b.Value)) != 1 {
		t.Fatal("the big list changed")
	}
}

func mustList(t *testing.T, v []byte) [][]byte {
	t.Helper()
	l, err := command.DecodeList(v)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
