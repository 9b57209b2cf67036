package fsm

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
)

func (h *harness) elemCount() int {
	h.t.Helper()
	var n int
	if err := h.f.view(func(tx *bolt.Tx) error { n = countElems(tx); return nil }); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// countElems counts the element bucket's entries: no element outlives its
// key.
func countElems(tx *bolt.Tx) int { return tx.Bucket(bucketElems).Stats().KeyN }

func fields(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s%d", prefix, i)
	}
	return out
}

func pairsOf(fs [][]byte) [][]byte {
	var out [][]byte
	for _, f := range fs {
		out = append(out, f, append([]byte("v-"), f...))
	}
	return out
}

func (h *harness) read(key string, set bool, mode command.CollReadMode, fs [][]byte, a, b int64, hasCount bool) *command.Result {
	h.t.Helper()
	return h.apply(*command.CollReadCommand([]byte(key), set, mode, fs, a, b, hasCount))
}

// TestCollElementsGoWithTheKey: no element outlives its key, whichever
// way the key goes (DEL, an overwrite, a lazy expiry, the sweeper,
// RENAME onto it, FLUSHALL, a collection emptied), RENAME keeps them with
// the header and COPY writes them again.
func TestCollElementsGoWithTheKey(t *testing.T) {
	h := newHarness(t)
	fill := func(key string, n int) {
		t.Helper()
		if r := h.apply(*command.HashSetCommand([]byte(key), pairsOf(fields("f", n)), false)); r.Code != command.CodeCreated {
			t.Fatalf("HSET %s: code %d", key, r.Code)
		}
	}
	fill("h", 300)
	if r := h.apply(*command.SetAddCommand([]byte("s"), fields("m", 200))); r.Code != command.CodeCreated || string(r.Value) != "200" {
		t.Fatalf("SADD: %d %q", r.Code, r.Value)
	}
	if n := h.elemCount(); n != 500 {
		t.Fatalf("%d elements, want 500", n)
	}
	h.apply(*command.KVDeleteCommand([]byte("s")))
	if n := h.elemCount(); n != 300 {
		t.Fatalf("after DEL: %d elements, want 300", n)
	}
	h.apply(*command.KVRenameCommand([]byte("h"), []byte("g"), command.RenamePlain, false))
	if n := h.elemCount(); n != 300 {
		t.Fatalf("after RENAME: %d elements, want 300", n)
	}
	if r := h.read("g", false, command.ReadFields, [][]byte{[]byte("f7")}, 0, 0, false); r.Code != command.CodeOK || r.Fence != 300 {
		t.Fatalf("HGET after RENAME: %d, %d elements", r.Code, r.Fence)
	} else if vals, found, _ := command.DecodeFound(r.Value); !found[0] || string(vals[0]) != "v-f7" {
		t.Fatalf("HGET after RENAME: %q", vals)
	}
	h.apply(*command.KVRenameCommand([]byte("g"), []byte("c"), command.RenameCopy, false))
	if n := h.elemCount(); n != 600 {
		t.Fatalf("after COPY: %d elements, want 600", n)
	}
	h.apply(*command.KVDeleteCommand([]byte("g")))
	if r := h.read("c", false, command.ReadAll, nil, 0, 0, false); r.Code != command.CodeOK || r.Fence != 300 {
		t.Fatalf("the copy after its source's DEL: %d, %d", r.Code, r.Fence)
	}
	h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte("c"), Value: []byte("x")}))
	if n := h.elemCount(); n != 0 {
		t.Fatalf("after SET over the copy: %d elements", n)
	}
	fill("a", 50)
	fill("b", 60)
	h.apply(*command.KVRenameCommand([]byte("a"), []byte("b"), command.RenamePlain, false))
	if n := h.elemCount(); n != 50 {
		t.Fatalf("after RENAME onto a hash: %d elements, want 50", n)
	}
	h.apply(*command.KVExpireCommand([]byte("b"), time.Second, 0))
	h.advance(2 * time.Second)
	if r, err := h.f.ReadTx(command.TxRequest{Commands: []*command.Command{command.CollReadCommand([]byte("b"), false, command.ReadAll, nil, 0, 0, false)},
		ReplyBudget: 1 << 20}, h.now()); err != nil || r.Code != command.CodeOK {
		t.Fatalf("a read of the expired hash: %v, %v", r, err)
	} else if rs, _ := command.TxResults(r); rs[0].Code != command.CodeNotFound {
		t.Fatalf("a read of the expired hash: code %d", rs[0].Code)
	}
	if n := h.elemCount(); n != 50 {
		t.Fatalf("a read outside the log removed an expired hash's elements: %d, want 50", n)
	}
	h.apply(*command.HashSetCommand([]byte("b"), pairsOf(fields("z", 1)), false)) // a write removes it lazily
	if n := h.elemCount(); n != 1 {
		t.Fatalf("after a write over the expired hash: %d elements, want 1", n)
	}
	fill("swept", 40)
	h.apply(*command.KVExpireCommand([]byte("swept"), time.Second, 0))
	h.advance(2 * time.Second)
	due, err := h.f.Due(h.now(), 100)
	if err != nil || len(due) == 0 {
		t.Fatalf("Due: %v, %v", due, err)
	}
	h.apply(*command.ExpireCommand(due))
	if n := h.elemCount(); n != 1 {
		t.Fatalf("after the sweep: %d elements, want 1", n)
	}
	if r := h.apply(*command.CollDelCommand([]byte("b"), [][]byte{[]byte("z0"), []byte("z0")}, false)); string(r.Value) != "1" {
		t.Fatalf("HDEL of the last field: %q", r.Value)
	}
	if _, ok := h.kv("b"); ok || h.elemCount() != 0 {
		t.Fatalf("an emptied hash is still there (%v), or %d elements", ok, h.elemCount())
	}
	fill("f1", 30)
	h.apply(*command.SetAddCommand([]byte("f2"), fields("m", 30)))
	h.apply(command.Command{Type: command.TypeKVFlush, Flags: command.FlagFlushAll})
	if n := h.elemCount(); n != 0 {
		t.Fatalf("after FLUSHALL: %d elements", n)
	}
}

// TestFlushStepCountsElements: a flush step counts each element as a key,
// so a keyspace of large collections is flushed in several entries, each
// bounded, and nothing is left.
func TestFlushStepCountsElements(t *testing.T) {
	h := newHarness(t)
	for i := range 3 {
		h.apply(*command.SetAddCommand(fmt.Appendf(nil, "s%d", i), fields("m", 6000)))
	}
	steps := 0
	var resume []byte
	bound := uint64(0)
	for steps < 10 {
		r := h.apply(command.Command{Type: command.TypeKVFlush, Flags: command.FlagFlushAll, Version: bound, Value: resume})
		steps++
		bound, resume = r.Version, r.Value
		if r.Fence > 2 {
			t.Fatalf("a step deleted %d sets of 6000: past its bound", r.Fence)
		}
		if len(resume) == 0 {
			break
		}
	}
	if steps != 3 || h.elemCount() != 0 {
		t.Fatalf("%d steps, %d elements left; want 3 steps, 0", steps, h.elemCount())
	}
}

// TestCollOneFieldWritesFewPages: a write of one field of a hash of
// 100000 fields writes about as many pages as one of a hash of 10: the
// element and the header, not the value.
func TestCollOneFieldWritesFewPages(t *testing.T) {
	h := newHarness(t)
	pages := func(key string) int64 {
		s := h.f.db.Stats()
		before := s.TxStats.GetWrite()
		h.apply(*command.HashSetCommand([]byte(key), [][]byte{[]byte("f5"), []byte("changed")}, false))
		s = h.f.db.Stats()
		return s.TxStats.GetWrite() - before
	}
	h.apply(*command.HashSetCommand([]byte("small"), pairsOf(fields("f", 10)), false))
	all := fields("f", 100000)
	for i := 0; i < len(all); i += 10000 {
		h.apply(*command.HashSetCommand([]byte("big"), pairsOf(all[i:i+10000]), false))
	}
	small, big := pages("small"), pages("big")
	if big > small+8 || big > 24 {
		t.Fatalf("one field of a 100000-field hash wrote %d pages, of a 10-field one %d", big, small)
	}
	t.Logf("pages written by one HSET: 10 fields %d, 100000 fields %d", small, big)
}

// wholeBase is a sandbox's base over the harness's state as the Redis
// face gives it: a collection whole.
func wholeBase(h *harness) func(key []byte) (command.KVEntry, bool, error) {
	return func(key []byte) (command.KVEntry, bool, error) {
		e, err := h.f.KV(key, h.now())
		if err != nil {
			return command.KVEntry{}, false, nil
		}
		if !e.Kind.IsColl() {
			return e, true, nil
		}
		op := command.WholeCommand(key, e.Kind)
		res, err := h.f.ReadTx(command.TxRequest{Commands: []*command.Command{op}, ReplyBudget: 1 << 30}, h.now())
		if err != nil {
			return command.KVEntry{}, false, err
		}
		rs, err := command.TxResults(res)
		if err != nil {
			return command.KVEntry{}, false, err
		}
		return command.KVEntry{Version: rs[0].Version, ExpiresAt: rs[0].ExpiresAt, Kind: e.Kind, Value: rs[0].Value}, true, nil
	}
}

// TestCollSandboxAnswersAsTheStore: the same commands, random choices
// included, answer the same in a script's sandbox and in the state
// machine, and leave the same collections: the sandbox walks the
// elements in the order the element bucket keeps.
func TestCollSandboxAnswersAsTheStore(t *testing.T) {
	h := newHarness(t)
	h.apply(*command.SetAddCommand([]byte("s"), fields("m", 500)))
	h.apply(*command.HashSetCommand([]byte("h"), pairsOf(fields("f", 300)), false))
	cmds := []*command.Command{
		command.SetPopCommand([]byte("s"), 42, -1),
		command.SetPopCommand([]byte("s"), 43, 7),
		command.SetPopCommand([]byte("s"), 44, 400),
		command.CollReadCommand([]byte("s"), true, command.ReadRandom, nil, 5, 10, true),
		command.CollReadCommand([]byte("s"), true, command.ReadRandom, nil, 6, -10, true),
		command.CollReadCommand([]byte("h"), false, command.ReadRandom, nil, 7, 3, true),
		command.CollReadCommand([]byte("h"), false, command.ReadRandom, nil, 7, 250, true),
		command.CollReadCommand([]byte("h"), false, command.ReadScan, nil, 0, 20, true),
		command.HashIncrCommand([]byte("h"), []byte("n"), []byte("5"), false),
		command.HashIncrCommand([]byte("h"), []byte("n"), []byte("1.5"), true),
		command.CollDelCommand([]byte("h"), fields("f", 100), false),
		command.SetAddCommand([]byte("t"), fields("m", 50)),
		command.SetStoreCommand([]byte("u"), [][]byte{[]byte("s"), []byte("t")}, command.StoreUnion),
		command.SetStoreCommand([]byte("i"), [][]byte{[]byte("s"), []byte("t")}, command.StoreInter),
		command.SetMoveCommand([]byte("t"), []byte("s"), []byte("m3")),
		command.SetAlgebraCommand([][]byte{[]byte("u"), []byte("t")}, command.ReadDiff, 0),
		command.KVDeleteCommand([]byte("t")),
		command.SetAddCommand([]byte("t"), fields("x", 3)),
		command.CollReadCommand([]byte("t"), true, command.ReadAll, nil, 0, 0, false),
		command.CollReadCommand([]byte("h"), false, command.ReadAll, nil, 0, 0, false),
		command.CollReadCommand([]byte("u"), true, command.ReadAll, nil, 0, 0, false),
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
		r := h.apply(*c)
		got, want := inBox[i], r
		gv, wv := got.Value, want.Value
		if c.Type == command.TypeCollRead && command.CollReadMode(c.Mode) == command.ReadAll {
			gv, wv = pairsPart(gv), pairsPart(wv) // the header's id is the revision that made it
		}
		if got.Code != want.Code || !bytes.Equal(gv, wv) || (c.Type == command.TypeCollRead && got.Fence != want.Fence) {
			t.Fatalf("%d %s: sandbox %d %q, store %d %q", i, c.Type, got.Code, clip(got.Value), want.Code, clip(want.Value))
		}
	}
	// And the effects, applied, leave what the direct commands did.
	g := newHarness(t)
	g.clock = h.clock
	g.apply(*command.SetAddCommand([]byte("s"), fields("m", 500)))
	g.apply(*command.HashSetCommand([]byte("h"), pairsOf(fields("f", 300)), false))
	sb = NewSandbox(g.clock, wholeBase(g))
	for _, c := range cmds {
		if _, err := sb.Apply(c); err != nil {
			t.Fatal(err)
		}
	}
	if r := g.apply(*sb.Effects()); r.Code != command.CodeOK {
		t.Fatalf("effects: code %d", r.Code)
	}
	for _, k := range []string{"s", "h", "t", "u", "i"} {
		set := k != "h"
		a := h.read(k, set, command.ReadAll, nil, 0, 0, false)
		b := g.read(k, set, command.ReadAll, nil, 0, 0, false)
		if a.Code != b.Code || !bytes.Equal(pairsPart(a.Value), pairsPart(b.Value)) {
			t.Fatalf("%s: direct %d %q, by effects %d %q", k, a.Code, clip(a.Value), b.Code, clip(b.Value))
		}
	}
}

// pairsPart is a whole collection's elements, without the header (whose
// id is the revision that made it).
func pairsPart(v []byte) []byte {
	if len(v) < command.CollHeaderLen {
		return v
	}
	return v[command.CollHeaderLen:]
}

func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// TestCollSnapshotKeepsElements: a snapshot restored into another state
// machine holds the same hashes and sets (the same data hash), and they
// are read and written as before.
func TestCollSnapshotKeepsElements(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	a.apply(*command.HashSetCommand([]byte("h"), pairsOf(fields("f", 2000)), false))
	a.apply(*command.SetAddCommand([]byte("s"), fields("m", 3000)))
	a.apply(*command.KVExpireCommand([]byte("s"), time.Hour, 0))
	if err := b.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, a.f)))); err != nil {
		t.Fatal(err)
	}
	ha, _ := a.f.DataHash()
	hb, _ := b.f.DataHash()
	if ha != hb {
		t.Fatal("the restored state's data hash differs")
	}
	b.index, b.clock = a.index, a.clock
	if r := b.read("h", false, command.ReadFields, [][]byte{[]byte("f1999")}, 0, 0, false); r.Code != command.CodeOK || r.Fence != 2000 {
		t.Fatalf("HGET after restore: %d, %d", r.Code, r.Fence)
	}
	if r := b.apply(*command.SetPopCommand([]byte("s"), 1, 10)); r.Code != command.CodeOK {
		t.Fatalf("SPOP after restore: %d", r.Code)
	}
	b.advance(2 * time.Hour)
	due, _ := b.f.Due(b.now(), 10)
	b.apply(*command.ExpireCommand(due))
	if n := b.elemCount(); n != 2000 {
		t.Fatalf("after the set's expiry: %d elements, want the hash's 2000", n)
	}
}

// TestCollBounds: a write past a collection's bounds is refused whole.
func TestCollBounds(t *testing.T) {
	h := newHarness(t)
	big := make([]byte, 1<<20-16)
	var pairs [][]byte
	for i := 0; i < command.MaxCollBytes/len(big); i++ {
		pairs = append(pairs, fmt.Appendf(nil, "f%d", i), big)
	}
	if r := h.apply(*command.HashSetCommand([]byte("h"), pairs[:len(pairs)/2], false)); r.Code != command.CodeCreated {
		t.Fatalf("half the bytes: code %d", r.Code)
	}
	if r := h.apply(*command.HashSetCommand([]byte("h"), pairs[len(pairs)/2:], false)); r.Code != command.CodeOK {
		t.Fatalf("up to the bound: code %d", r.Code)
	}
	if r := h.apply(*command.HashSetCommand([]byte("h"), [][]byte{[]byte("one"), make([]byte, 4096)}, false)); r.Code != command.CodeTooLong || r.Err() != command.ErrTooLong {
		t.Fatalf("past the bound: code %d", r.Code)
	}
	if r := h.read("h", false, command.ReadFields, [][]byte{[]byte("one")}, 0, 0, false); r.Fence != uint64(len(pairs)/2) {
		t.Fatalf("a refused write changed the hash: %d fields", r.Fence)
	}
	long := bytes.Repeat([]byte("x"), command.MaxFieldLen+1)
	if err := command.SetAddCommand([]byte("s"), [][]byte{long}).Validate(); err == nil {
		t.Fatal("a member past MaxFieldLen passed Validate")
	}
}

// TestCollDeleteAtTheBound: a set at its bound of elements is deleted in
// one apply, every element with it (its time is logged: no timed
// assertion on a shared machine).
func TestCollDeleteAtTheBound(t *testing.T) {
	if testing.Short() {
		t.Skip("a million elements")
	}
	h := newHarness(t)
	all := fields("m", command.MaxCollElems)
	for i := 0; i < len(all); i += command.MaxCmdElems {
		if r := h.apply(*command.SetAddCommand([]byte("big"), all[i:i+command.MaxCmdElems])); r.Code == command.CodeTooLong {
			t.Fatalf("SADD at %d: too long", i)
		}
	}
	if r := h.apply(*command.SetAddCommand([]byte("big"), [][]byte{[]byte("one more")})); r.Code != command.CodeTooLong {
		t.Fatalf("past the bound of elements: code %d", r.Code)
	}
	start := time.Now()
	if r := h.apply(*command.KVDeleteCommand([]byte("big"))); r.Code != command.CodeOK {
		t.Fatalf("DEL: code %d", r.Code)
	}
	t.Logf("DEL of a set of %d members: %s", command.MaxCollElems, time.Since(start))
	if n := h.elemCount(); n != 0 {
		t.Fatalf("%d elements left", n)
	}
}

// TestCollReadInTheOpenTransaction: with amortised commits, a read of a
// hash sees the write just applied, from the open transaction, and
// commits nothing (a read of one key is a point read); a transaction of
// two reads commits it first, as every other read does.
func TestCollReadInTheOpenTransaction(t *testing.T) {
	h := amortised(t, filepath.Join(t.TempDir(), "fsm.db"), 100, time.Minute)
	h.apply(*command.HashSetCommand([]byte("h"), [][]byte{[]byte("f"), []byte("v")}, false))
	read := func(n int) []*command.Result {
		cmds := make([]*command.Command, n)
		for i := range cmds {
			cmds[i] = command.CollReadCommand([]byte("h"), false, command.ReadFields, [][]byte{[]byte("f")}, 0, 0, false)
		}
		r, err := h.f.ReadTx(command.TxRequest{Commands: cmds, ReplyBudget: 1 << 20}, h.now())
		if err != nil {
			t.Fatal(err)
		}
		rs, err := command.TxResults(r)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	before := h.f.Commits()
	if rs := read(1); rs[0].Code != command.CodeOK || rs[0].Fence != 1 {
		t.Fatalf("HGET in the open transaction: %+v", rs[0])
	}
	if h.f.Commits() != before {
		t.Fatal("a read of one hash committed the open transaction")
	}
	if rs := read(2); rs[1].Code != command.CodeOK {
		t.Fatalf("two reads: %+v", rs[1])
	}
	if h.f.Commits() == before {
		t.Fatal("a transaction of two reads did not commit the open transaction")
	}
}
