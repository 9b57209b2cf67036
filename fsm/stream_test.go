package fsm

import (
	"bytes"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// xaddAt adds field f=v to key with an id of mode, returning its id.
func xaddAt(h *harness, key string, mode command.XAddIDMode, id command.StreamID, trim command.StreamTrim) (command.StreamID, command.Code) {
	h.t.Helper()
	r := h.apply(*command.XAddCommand([]byte(key), mode, id, [][]byte{[]byte("f"), []byte("v")}, trim, false))
	got, _ := command.StreamIDOf(r.Value)
	return got, r.Code
}

// xread reads key's range whole.
func xread(h *harness, key string) (command.StreamHeader, []command.StreamID) {
	h.t.Helper()
	r := h.apply(*command.StreamRangeCommand([]byte(key), command.StreamID{}, command.MaxStreamID, -1, false))
	if r.Code != command.CodeOK {
		h.t.Fatalf("XRANGE %s: code %d", key, r.Code)
	}
	hd, pairs, err := command.StreamRead(r)
	if err != nil {
		h.t.Fatal(err)
	}
	var ids []command.StreamID
	for i := 0; i < len(pairs); i += 2 {
		id, _ := command.StreamIDOf(pairs[i])
		ids = append(ids, id)
	}
	return hd, ids
}

// TestStreamAutoIDFromStamp: "*" is the entry's stamp's millisecond;
// when the stamp is behind the last id (a clock that went back, or ids
// given ahead), the id after the last, as Redis's streamNextID; ms-* is
// the next sequence of ms; the last id there is refuses more.
func TestStreamAutoIDFromStamp(t *testing.T) {
	h := newHarness(t)
	ms := uint64(h.clock / 1e6)
	steps := []struct {
		mode    command.XAddIDMode
		id      command.StreamID
		advance time.Duration
		want    command.StreamID
		code    command.Code
	}{
		{command.XAddAuto, command.StreamID{}, 0, command.StreamID{Ms: ms}, command.CodeCreated},
		{command.XAddAuto, command.StreamID{}, 0, command.StreamID{Ms: ms, Seq: 1}, command.CodeOK},
		{command.XAddAuto, command.StreamID{}, time.Millisecond, command.StreamID{Ms: ms + 1}, command.CodeOK},
		{command.XAddExplicit, command.StreamID{Ms: ms + 100, Seq: 5}, 0, command.StreamID{Ms: ms + 100, Seq: 5}, command.CodeOK},
		{command.XAddAuto, command.StreamID{}, time.Millisecond, command.StreamID{Ms: ms + 100, Seq: 6}, command.CodeOK},
		{command.XAddMsAuto, command.StreamID{Ms: ms + 100}, 0, command.StreamID{Ms: ms + 100, Seq: 7}, command.CodeOK},
		{command.XAddMsAuto, command.StreamID{Ms: ms + 101}, 0, command.StreamID{Ms: ms + 101}, command.CodeOK},
		{command.XAddMsAuto, command.StreamID{Ms: ms}, 0, command.StreamID{}, command.CodeOutOfRange},
		{command.XAddExplicit, command.StreamID{Ms: ms + 101}, 0, command.StreamID{}, command.CodeOutOfRange},
		{command.XAddExplicit, command.StreamID{Ms: ms + 200, Seq: 1<<64 - 1}, 0, command.StreamID{Ms: ms + 200, Seq: 1<<64 - 1}, command.CodeOK},
		{command.XAddMsAuto, command.StreamID{Ms: ms + 200}, 0, command.StreamID{}, command.CodeOutOfRange},
		{command.XAddAuto, command.StreamID{}, 0, command.StreamID{Ms: ms + 201}, command.CodeOK},
		{command.XAddExplicit, command.MaxStreamID, 0, command.MaxStreamID, command.CodeOK},
		{command.XAddAuto, command.StreamID{}, 0, command.StreamID{}, command.CodeOverflow},
		{command.XAddMsAuto, command.StreamID{Ms: 1<<64 - 1}, 0, command.StreamID{}, command.CodeOverflow},
	}
	for i, s := range steps {
		h.advance(s.advance)
		got, code := xaddAt(h, "s", s.mode, s.id, command.StreamTrim{})
		if code != s.code || (code <= command.CodeCreated && got != s.want) {
			t.Fatalf("%d: XADD %d %v = %v code %d, want %v code %d", i, s.mode, s.id, got, code, s.want, s.code)
		}
	}
	hd, ids := xread(h, "s")
	if hd.Count != 10 || hd.Added != 10 || hd.Last != command.MaxStreamID || hd.First != (command.StreamID{Ms: ms}) || len(ids) != 10 {
		t.Fatalf("header %+v, %d ids", hd, len(ids))
	}
}

// TestStreamTrimByNodes: entries fill nodes of StreamNodeEntries; "~"
// removes whole nodes only, within LIMIT; an exact trim takes entries
// from within a node; XDEL empties a node and removes it.
func TestStreamTrimByNodes(t *testing.T) {
	h := newHarness(t)
	for i := 1; i <= 1000; i++ {
		if _, code := xaddAt(h, "s", command.XAddExplicit, command.StreamID{Ms: uint64(i)}, command.StreamTrim{}); code > command.CodeCreated {
			t.Fatalf("XADD %d: code %d", i, code)
		}
	}
	trim := func(tr command.StreamTrim) string {
		return string(h.apply(*command.XTrimCommand([]byte("s"), tr)).Value)
	}
	if hd, _ := xread(h, "s"); hd.Nodes != 10 {
		t.Fatalf("nodes %d, want 10", hd.Nodes)
	}
	if n := trim(command.StreamTrim{Strategy: command.TrimMaxLen, Approx: true, MaxLen: 950, Limit: 10000}); n != "0" {
		t.Fatalf("MAXLEN ~ 950 removed %s, want 0 (no whole node)", n)
	}
	if n := trim(command.StreamTrim{Strategy: command.TrimMaxLen, Approx: true, MaxLen: 750, Limit: 10000}); n != "200" {
		t.Fatalf("MAXLEN ~ 750 removed %s, want 200", n)
	}
	if n := trim(command.StreamTrim{Strategy: command.TrimMaxLen, Approx: true, MaxLen: 0, Limit: 250}); n != "200" {
		t.Fatalf("MAXLEN ~ 0 LIMIT 250 removed %s, want 200", n)
	}
	if n := trim(command.StreamTrim{Strategy: command.TrimMinID, MinID: command.StreamID{Ms: 555}}); n != "154" {
		t.Fatalf("MINID 555 removed %s, want 154", n)
	}
	if n := trim(command.StreamTrim{Strategy: command.TrimMaxLen, MaxLen: 440}); n != "6" {
		t.Fatalf("MAXLEN 440 removed %s, want 6", n)
	}
	hd, ids := xread(h, "s")
	if hd.Count != 440 || len(ids) != 440 || ids[0] != (command.StreamID{Ms: 561}) || hd.First != ids[0] || hd.Nodes != 5 {
		t.Fatalf("after the trims: %+v, first %v", hd, ids[0])
	}
	var del []command.StreamID
	for i := 561; i <= 600; i++ {
		del = append(del, command.StreamID{Ms: uint64(i)})
	}
	if r := h.apply(*command.XDelCommand([]byte("s"), del)); string(r.Value) != "40" {
		t.Fatalf("XDEL of a node's rest: %q", r.Value)
	}
	if hd, _ := xread(h, "s"); hd.Nodes != 4 || hd.First != (command.StreamID{Ms: 601}) || hd.MaxDeleted != (command.StreamID{Ms: 600}) || hd.Count != 400 {
		t.Fatalf("after XDEL: %+v", hd)
	}
	if n := trim(command.StreamTrim{Strategy: command.TrimMaxLen}); n != "400" {
		t.Fatalf("MAXLEN 0 removed %s", n)
	}
	if hd, ids := xread(h, "s"); hd.Count != 0 || len(ids) != 0 || !hd.First.IsZero() || hd.Nodes != 0 || hd.Added != 1000 {
		t.Fatalf("an emptied stream: %+v", hd)
	}
	if n := h.elemCount(); n != 0 {
		t.Fatalf("an emptied stream keeps %d element entries", n)
	}
}

// TestStreamGoesWithTheKey: a stream's entries and nodes go with DEL and
// FLUSH, move with RENAME and are written again by COPY, header whole.
func TestStreamGoesWithTheKey(t *testing.T) {
	h := newHarness(t)
	for i := 1; i <= 150; i++ {
		xaddAt(h, "s", command.XAddAuto, command.StreamID{}, command.StreamTrim{})
	}
	if n := h.elemCount(); n != 152 { // 150 entries, 2 nodes
		t.Fatalf("%d element entries, want 152", n)
	}
	h.apply(*command.KVRenameCommand([]byte("s"), []byte("c"), command.RenameCopy, false))
	if n := h.elemCount(); n != 304 {
		t.Fatalf("after COPY: %d, want 304", n)
	}
	a, ida := xread(h, "s")
	b, idb := xread(h, "c")
	if a.Last != b.Last || a.Added != b.Added || a.Nodes != b.Nodes || len(ida) != len(idb) || a.ID == b.ID {
		t.Fatalf("the copy: %+v, source %+v", b, a)
	}
	h.apply(*command.KVDeleteCommand([]byte("s")))
	h.apply(*command.KVRenameCommand([]byte("c"), []byte("d"), command.RenamePlain, false))
	if n := h.elemCount(); n != 152 {
		t.Fatalf("after DEL and RENAME: %d, want 152", n)
	}
	if d, _ := xread(h, "d"); d.Count != 150 {
		t.Fatalf("renamed: %+v", d)
	}
	h.apply(command.Command{Type: command.TypeKVFlush, Flags: command.FlagFlushAll})
	if n := h.elemCount(); n != 0 {
		t.Fatalf("after FLUSHALL: %d", n)
	}
}

// TestStreamSandboxAnswersAsTheStore: a script's sandbox, given a stream
// whole, answers every stream command as the state machine does.
func TestStreamSandboxAnswersAsTheStore(t *testing.T) {
	h := newHarness(t)
	for i := 1; i <= 250; i++ {
		xaddAt(h, "s", command.XAddExplicit, command.StreamID{Ms: uint64(i), Seq: uint64(i % 3)}, command.StreamTrim{})
	}
	k := []byte("s")
	fv := [][]byte{[]byte("a"), []byte("1"), []byte("b"), []byte("")}
	cmds := []*command.Command{
		command.StreamRangeCommand(k, command.StreamID{Ms: 10}, command.StreamID{Ms: 40}, -1, false),
		command.StreamRangeCommand(k, command.StreamID{Ms: 10}, command.StreamID{Ms: 40}, 5, true),
		command.XAddCommand(k, command.XAddAuto, command.StreamID{}, fv, command.StreamTrim{}, false),
		command.XAddCommand(k, command.XAddMsAuto, command.StreamID{Ms: 1 << 50}, fv, command.StreamTrim{Strategy: command.TrimMaxLen, Approx: true, MaxLen: 100, Limit: 10000}, false),
		command.XAddCommand(k, command.XAddExplicit, command.StreamID{Ms: 3}, fv, command.StreamTrim{}, false),
		command.XDelCommand(k, []command.StreamID{{Ms: 201, Seq: 0}, {Ms: 202, Seq: 1}, {Ms: 203, Seq: 2}, {Ms: 9}}),
		command.XTrimCommand(k, command.StreamTrim{Strategy: command.TrimMinID, MinID: command.StreamID{Ms: 230}}),
		command.XSetIDCommand(k, command.StreamID{Ms: 1 << 51}, 500, command.StreamID{Ms: 300}),
		command.XAddCommand([]byte("new"), command.XAddAuto, command.StreamID{}, fv, command.StreamTrim{}, false),
		command.XAddCommand([]byte("new"), command.XAddAuto, command.StreamID{}, fv, command.StreamTrim{Strategy: command.TrimMaxLen, MaxLen: 1}, false),
		command.StreamRangeCommand([]byte("new"), command.StreamID{}, command.MaxStreamID, -1, false),
		command.StreamRangeCommand(k, command.StreamID{}, command.MaxStreamID, -1, false),
		command.StreamAllCommand(k),
	}
	sb := NewSandbox(h.clock, wholeBase(h))
	var inBox []*command.Result
	for _, c := range cmds {
		r, err := sb.Apply(c)
		if err != nil {
			t.Fatalf("sandbox %s: %v", c.Type, err)
		}
		inBox = append(inBox, r)
	}
	for i, c := range cmds {
		want, got := h.apply(*c), inBox[i]
		if got.Code != want.Code || !sameStreamValue(got.Value, want.Value) {
			t.Fatalf("%d %s: sandbox %d %q, store %d %q", i, c.Type, got.Code, clip(got.Value), want.Code, clip(want.Value))
		}
	}
}

// sameStreamValue compares two answers but a stream header's id (the
// sandbox's new stream is made at revision 0).
func sameStreamValue(a, b []byte) bool {
	if len(a) >= command.StreamHeaderLen && len(b) >= command.StreamHeaderLen && len(a) == len(b) {
		return bytes.Equal(a[8:], b[8:])
	}
	return bytes.Equal(a, b)
}
