package fsm

import (
	"bytes"
	"testing"
	"time"
)

// TestKindInCreated: a string entry is stored as before lists (the kind
// byte zero), a list's kind rides in Created's top byte, and both decode
// to what was encoded.
func TestKindInCreated(t *testing.T) {
	s := KVEntry{Version: 7, Created: 3, ExpiresAt: 99, Value: []byte("v")}
	b := encodeKV(&s)
	if want := []byte{0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 3}; !bytes.Equal(b[:16], want) {
		t.Fatalf("a string's header %x, want %x", b[:16], want)
	}
	l := KVEntry{Version: 7, Created: 1<<56 - 1, Kind: KindList, Value: EncodeList([][]byte{[]byte("a")})}
	for _, e := range []KVEntry{s, l} {
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
	h.apply(*ListPushCommand([]byte("l"), [][]byte{[]byte("a"), []byte("b")}, true, false))
	h.apply(*KVSetCommand(KVSetRequest{Key: []byte("s"), Value: []byte("5")}))
	before, _ := h.kv("l")
	before = before.Clone()
	for _, c := range []*Command{
		KVSetCommand(KVSetRequest{Key: []byte("l"), Value: []byte("x"), ReturnOld: true}),
		KVSetCommand(KVSetRequest{Key: []byte("l"), Value: []byte("x"), Mode: SetIfEq, Match: []byte("a")}),
		KVGetDelCommand([]byte("l"), 0),
		KVDeleteIfCommand([]byte("l"), SetIfNe, []byte("x"), 0),
		KVIncrCommand([]byte("l"), 1),
		KVIncrFloatCommand([]byte("l"), []byte("1")),
		KVAppendCommand([]byte("l"), []byte("x"), 1<<20),
		KVSetRangeCommand([]byte("l"), 0, []byte("x"), 1<<20),
		KVExpireCommand([]byte("l"), time.Hour, FlagExpireGet),
		ListPushCommand([]byte("s"), [][]byte{[]byte("a")}, false, false),
		ListPopCommand([][]byte{[]byte("s")}, false, -1),
		ListPopCommand([][]byte{[]byte("none"), []byte("s"), []byte("l")}, false, 1),
		ListRemCommand([]byte("s"), []byte("5"), 0),
		ListTrimCommand([]byte("s"), 0, 0),
	} {
		if r := h.apply(*c); r.Code != CodeWrongType || r.Err() != ErrWrongType {
			t.Errorf("%s on the other kind: code %d", c.Type, r.Code)
		}
	}
	if after, _ := h.kv("l"); after.Version != before.Version || !bytes.Equal(after.Value, before.Value) || after.Kind != KindList {
		t.Fatalf("the list changed under refused commands: %+v, was %+v", after, before)
	}
	if s, _ := h.kv("s"); string(s.Value) != "5" || s.Kind != KindString {
		t.Fatalf("the string changed under refused commands: %+v", s)
	}
	if r := h.apply(*KVSetCommand(KVSetRequest{Key: []byte("l"), Value: []byte("x"), Mode: SetNX})); r.Code != CodeExists || r.Value != nil {
		t.Fatalf("SETNX on a list: code %d value %q, want exists and no value", r.Code, r.Value)
	}
	if r := h.apply(*KVExpireCommand([]byte("l"), time.Hour, 0)); r.Code != CodeOK {
		t.Fatalf("EXPIRE of a list: code %d", r.Code)
	}
	if r := h.apply(*KVRenameCommand([]byte("l"), []byte("m"), RenameCopy, false)); r.Code != CodeOK {
		t.Fatalf("COPY of a list: code %d", r.Code)
	}
	if m, ok := h.kv("m"); !ok || m.Kind != KindList || !bytes.Equal(m.Value, before.Value) {
		t.Fatalf("the copy: %+v", m)
	}
	if r := h.apply(*KVSetCommand(KVSetRequest{Key: []byte("l"), Value: []byte("x")})); r.Code != CodeOK {
		t.Fatalf("SET over a list: code %d", r.Code)
	}
	if l, _ := h.kv("l"); l.Kind != KindString || string(l.Value) != "x" || l.ExpiresAt != 0 {
		t.Fatalf("SET over a list left %+v", l)
	}
}

// TestListBounds: a push past MaxListElems or MaxListBytes is refused
// whole (CodeTooLong) and the list keeps what it held.
func TestListBounds(t *testing.T) {
	h := newHarness(t)
	many := make([][]byte, MaxListElems)
	for i := range many {
		many[i] = []byte{byte(i)}
	}
	if r := h.apply(*ListPushCommand([]byte("l"), many, true, false)); r.Code != CodeCreated || string(r.Value) != "65536" {
		t.Fatalf("a full list: code %d %q", r.Code, r.Value)
	}
	if r := h.apply(*ListPushCommand([]byte("l"), many[:1], false, false)); r.Code != CodeTooLong {
		t.Fatalf("one past the elements' bound: code %d", r.Code)
	}
	big := bytes.Repeat([]byte("x"), MaxListBytes/2)
	if r := h.apply(*ListPushCommand([]byte("b"), [][]byte{big}, true, false)); r.Code != CodeCreated {
		t.Fatalf("half the bytes: code %d", r.Code)
	}
	if r := h.apply(*ListPushCommand([]byte("b"), [][]byte{big}, true, false)); r.Code != CodeTooLong {
		t.Fatalf("past the bytes' bound: code %d", r.Code)
	}
	if l, _ := h.kv("l"); len(mustList(t, l.Value)) != MaxListElems {
		t.Fatal("the full list changed")
	}
	if b, _ := h.kv("b"); len(mustList(t, b.Value)) != 1 {
		t.Fatal("the big list changed")
	}
}

func mustList(t *testing.T, v []byte) [][]byte {
	t.Helper()
	l, err := DecodeList(v)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
