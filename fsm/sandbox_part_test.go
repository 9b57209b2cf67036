package fsm

import (
	"bytes"
	"testing"

	"github.com/idemgate/idemgate/command"
)

// elemReads counts what a sandbox's element reader read.
type elemReads struct{ fields, wholes int }

// partBase is a sandbox's base over the harness's state as the Redis
// face gives it: a collection's header alone, and its elements read
// through the reader as asked (counted in n).
func partBase(h *harness, n *elemReads) (func(key []byte) (command.KVEntry, bool, error), func(key []byte, kind command.Kind, fields [][]byte) (uint64, []byte, bool, error)) {
	base := func(key []byte) (command.KVEntry, bool, error) {
		e, err := h.f.KV(key, h.now())
		if err != nil {
			return command.KVEntry{}, false, nil
		}
		return e, true, nil
	}
	elems := func(key []byte, kind command.Kind, fields [][]byte) (uint64, []byte, bool, error) {
		mode := command.ReadFields
		if fields == nil {
			mode, n.wholes = command.ReadAll, n.wholes+1
		}
		n.fields += len(fields)
		op := command.CollReadCommand(key, kind == command.KindSet, mode, fields, 0, 0, false)
		if kind == command.KindZSet {
			op.Flags = command.FlagCollZSet
		}
		res, err := h.f.ReadTx(command.TxRequest{Commands: []*command.Command{op}, ReplyBudget: 1 << 30}, h.now())
		if err != nil {
			return 0, nil, false, err
		}
		rs, err := command.TxResults(res)
		if err != nil || rs[0].Code != command.CodeOK {
			return 0, nil, false, err
		}
		return rs[0].Version, rs[0].Value, true, nil
	}
	return base, elems
}

// partFill writes the collections the tests below read.
func partFill(h *harness) {
	h.apply(*command.SetAddCommand([]byte("s"), fields("m", 500)))
	h.apply(*command.HashSetCommand([]byte("h"), pairsOf(fields("f", 300)), false))
	zaddN(h, "z", 200, 0.5)
}

// TestSandboxReadsInPart: a sandbox given a collection's header alone
// answers every command as one given it whole (point reads and writes,
// then walks over what the script wrote, on a hash, a set and a sorted
// set), its effects leave the same state, and the point commands before
// the first walk read only the fields they name.
func TestSandboxReadsInPart(t *testing.T) {
	zr := func(s command.ZRangeSpec) *command.Command { return command.ZRangeCommand([]byte("z"), s) }
	cmds := []*command.Command{
		command.CollReadCommand([]byte("h"), false, command.ReadFields, [][]byte{[]byte("f5"), []byte("nope")}, 0, 0, false),
		command.HashSetCommand([]byte("h"), [][]byte{[]byte("f5"), []byte("new"), []byte("g1"), []byte("x")}, false),
		command.CollDelCommand([]byte("h"), [][]byte{[]byte("f6"), []byte("g1")}, false),
		command.HashIncrCommand([]byte("h"), []byte("n"), []byte("5"), false),
		command.CollReadCommand([]byte("h"), false, command.ReadFields, [][]byte{[]byte("f5"), []byte("f6"), []byte("g1"), []byte("n")}, 0, 0, false),
		command.SetAddCommand([]byte("s"), [][]byte{[]byte("m1"), []byte("new")}),
		command.CollDelCommand([]byte("s"), [][]byte{[]byte("m2")}, true),
		command.CollReadCommand([]byte("s"), true, command.ReadFields, [][]byte{[]byte("m1"), []byte("m2"), []byte("new")}, 0, 0, false),
		command.ZAddCommand([]byte("z"), []float64{5, 1e9}, [][]byte{[]byte("m1"), []byte("new")}, command.ZAddCH),
		command.ZRemCommand([]byte("z"), [][]byte{[]byte("m3")}),
		// The walks: each reads its collection whole, the script's
		// writes laid over it.
		command.CollReadCommand([]byte("h"), false, command.ReadAll, nil, 0, 0, false),
		command.CollReadCommand([]byte("h"), false, command.ReadScan, nil, 0, 20, true),
		command.SetPopCommand([]byte("s"), 44, 7),
		command.CollReadCommand([]byte("s"), true, command.ReadAll, nil, 0, 0, false),
		zr(command.ZRangeSpec{By: command.ZByRank, Start: 0, Stop: -1, Limit: -1}),
		command.ZRankCommand([]byte("z"), []byte("new"), false),
		command.CollDelCommand([]byte("h"), [][]byte{[]byte("f7")}, false),
		command.CollReadCommand([]byte("h"), false, command.ReadAll, nil, 0, 0, false),
	}
	const walks = 10 // cmds[walks:] walk
	whole, part := newHarness(t), newHarness(t)
	partFill(whole)
	partFill(part)
	var n elemReads
	base, elems := partBase(part, &n)
	sw, sp := NewSandbox(whole.clock, wholeBase(whole), nil), NewSandbox(part.clock, base, elems)
	for i, c := range cmds {
		if i == walks && (n.wholes != 0 || n.fields > 16) {
			t.Fatalf("before the first walk the sandbox read %d fields and %d wholes; want the named fields only", n.fields, n.wholes)
		}
		w, err1 := sw.Apply(c)
		p, err2 := sp.Apply(c)
		if err1 != nil || err2 != nil {
			t.Fatalf("%d %s: %v, %v", i, c.Type, err1, err2)
		}
		wv, pv := w.Value, p.Value
		if c.Type == command.TypeCollRead && command.CollReadMode(c.Mode) == command.ReadAll {
			wv, pv = pairsPart(wv), pairsPart(pv)
		}
		if w.Code != p.Code || !bytes.Equal(wv, pv) || w.Fence != p.Fence {
			t.Fatalf("%d %s: given whole %d %q, in part %d %q", i, c.Type, w.Code, clip(w.Value), p.Code, clip(p.Value))
		}
	}
	if n.wholes != 3 {
		t.Fatalf("%d whole reads, want one of each collection", n.wholes)
	}
	if r := whole.apply(*sw.Effects()); r.Code != command.CodeOK {
		t.Fatalf("effects given whole: code %d", r.Code)
	}
	if r := part.apply(*sp.Effects()); r.Code != command.CodeOK {
		t.Fatalf("effects in part: code %d", r.Code)
	}
	hw, _ := whole.f.DataHash()
	hp, _ := part.f.DataHash()
	if hw != hp {
		t.Fatal("the effects of the two sandboxes left different states")
	}
}

// TestSandboxPartOutOfStep: a collection written between the sandbox's
// read of its header and of a field is a read that can never hold: a run
// that wrote nothing is not Unchanged, and one that wrote is refused when
// its effects apply (CodeConflict), so neither answers what it read out
// of step.
func TestSandboxPartOutOfStep(t *testing.T) {
	for _, wrote := range []bool{false, true} {
		h := newHarness(t)
		partFill(h)
		var n elemReads
		base, elems := partBase(h, &n)
		sb := NewSandbox(h.clock, base, elems)
		if _, err := sb.Apply(command.CollReadCommand([]byte("h"), false, command.ReadFields, [][]byte{[]byte("f1")}, 0, 0, false)); err != nil {
			t.Fatal(err)
		}
		h.apply(*command.HashSetCommand([]byte("h"), [][]byte{[]byte("f2"), []byte("changed")}, false))
		r, err := sb.Apply(command.CollReadCommand([]byte("h"), false, command.ReadFields, [][]byte{[]byte("f2")}, 0, 0, false))
		if err != nil {
			t.Fatal(err)
		}
		vals, _, _ := command.DecodeFound(r.Value)
		t.Logf("the field read out of step: %q", vals[0])
		if !wrote {
			if held, err := sb.Unchanged(); held || err != nil {
				t.Fatalf("Unchanged = %v, %v after a read out of step", held, err)
			}
			continue
		}
		if _, err := sb.Apply(command.HashSetCommand([]byte("h"), [][]byte{[]byte("f3"), []byte("mine")}, false)); err != nil {
			t.Fatal(err)
		}
		if r := h.apply(*sb.Effects()); r.Code != command.CodeConflict {
			t.Fatalf("effects after a read out of step: code %d, want CodeConflict", r.Code)
		}
	}
}
