package fsm

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
)

// TestDropIsLazy: a collection past the entry's drop budget leaves the
// KV bucket at once and its elements later, whichever way it goes (DEL,
// an overwrite, a lazy expiry, the sweeper, FLUSHALL, a store over it),
// so the entry that drops it deletes none of them; a new collection on
// the same key never sees them; reclaiming steps delete them, each at
// most reclaimStep.
func TestDropIsLazy(t *testing.T) {
	const big = 3 * dropBudget
	for _, tc := range []struct {
		name string
		drop func(h *harness)
	}{
		{"DEL", func(h *harness) { h.apply(*command.KVDeleteCommand([]byte("h"))) }},
		{"SET over it", func(h *harness) {
			h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte("h"), Value: []byte("s")}))
		}},
		{"a lazy expiry", func(h *harness) {
			h.apply(*command.KVExpireCommand([]byte("h"), time.Second, 0))
			h.advance(2 * time.Second)
			h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte("h"), Value: []byte("s")}))
		}},
		{"the sweeper", func(h *harness) {
			h.apply(*command.KVExpireCommand([]byte("h"), time.Second, 0))
			h.advance(2 * time.Second)
			due, err := h.f.Due(h.now(), 10)
			if err != nil || len(due) != 1 {
				t.Fatalf("Due: %v, %v", due, err)
			}
			h.apply(*command.ExpireCommand(due))
		}},
		{"FLUSHALL", func(h *harness) {
			h.apply(command.Command{Type: command.TypeKVFlush, Flags: command.FlagFlushAll})
		}},
		{"SUNIONSTORE over it", func(h *harness) {
			h.apply(*command.SetAddCommand([]byte("src"), [][]byte{[]byte("a")}))
			h.apply(*command.SetStoreCommand([]byte("h"), [][]byte{[]byte("src")}, command.StoreUnion))
			h.apply(*command.KVDeleteCommand([]byte("src")))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.apply(*command.HashSetCommand([]byte("h"), pairsOf(fields("f", big)), false))
			tc.drop(h)
			if n := h.elemCount(); n < big-dropBudget {
				t.Fatalf("the drop deleted %d elements at once, over the budget %d", big-n, dropBudget)
			}
			if g := h.f.Graves(); g != 1 {
				t.Fatalf("%d graves, want 1", g)
			}
			if e, ok := h.kv("h"); ok && e.Kind == command.KindHash {
				t.Fatal("the hash is still there")
			}
			// A new hash on the key sees its own fields only, while the
			// old ones wait in the graveyard.
			h.apply(*command.KVDeleteCommand([]byte("h")))
			h.apply(*command.HashSetCommand([]byte("h"), pairsOf(fields("f", 3)), false))
			r := h.read("h", false, command.ReadAll, nil, 0, 0, false)
			_, pairs, err := command.DecodeWholeColl(r.Value)
			if r.Code != command.CodeOK || err != nil || len(pairs) != 6 || r.Fence != 3 {
				t.Fatalf("the new hash: code %d, %d pairs, %d fields (%v)", r.Code, len(pairs)/2, r.Fence, err)
			}
			steps := h.reclaim()
			if want := big / reclaimStep; steps < want {
				t.Fatalf("%d reclaiming steps, want at least %d", steps, want)
			}
			if n := h.elemCount(); n != 3 {
				t.Fatalf("after reclaiming: %d elements, want the new hash's 3", n)
			}
		})
	}
}

// TestDropBudgetIsAnEntrys: the budget is counted per log entry: of two
// collections dropped by one entry (a batch), the first within the
// budget goes at once and the second is buried; one batch of raft's
// holding two entries drops both at once, as two single entries would.
func TestDropBudgetIsAnEntrys(t *testing.T) {
	const n = dropBudget/2 + 100
	fill := func(h *harness) {
		for _, k := range []string{"a", "b"} {
			h.apply(*command.SetAddCommand([]byte(k), fields("m", n)))
		}
	}
	h := newHarness(t)
	fill(h)
	h.index++
	batch := EncodeBatch([][]byte{command.KVDeleteCommand([]byte("a")).Encode(nil), command.KVDeleteCommand([]byte("b")).Encode(nil)})
	h.f.Apply(&raft.Log{Index: h.index, Term: 1, Type: raft.LogCommand, Data: batch})
	if got := h.elemCount(); got != n || h.f.Graves() != 1 {
		t.Fatalf("one entry dropping two sets of %d: %d elements left, %d graves; want %d, 1", n, got, h.f.Graves(), n)
	}

	g := newHarness(t)
	fill(g)
	g.f.ApplyBatch([]*raft.Log{g.log(*command.KVDeleteCommand([]byte("a"))), g.log(*command.KVDeleteCommand([]byte("b")))})
	if got := g.elemCount(); got != 0 || g.f.Graves() != 0 {
		t.Fatalf("two entries in one batch: %d elements left, %d graves; want 0, 0", got, g.f.Graves())
	}
}

// TestGravesReplicasAgree: replicas that batch the same entries
// differently, and a node restored from a snapshot taken while graves
// remain, hold the same data (DataHash) at every index, and reclaim the
// same elements with the same entries.
func TestGravesReplicasAgree(t *testing.T) {
	var logs []*raft.Log
	src := newHarness(t)
	add := func(c command.Command) { logs = append(logs, src.log(c)) }
	add(*command.HashSetCommand([]byte("h"), pairsOf(fields("f", 2*dropBudget)), false))
	add(*command.SetAddCommand([]byte("s"), fields("m", 3*dropBudget)))
	add(command.Command{Type: command.TypeKVDelete, Key: []byte("h")})
	add(*command.HashSetCommand([]byte("h"), pairsOf(fields("g", 5)), false))
	add(command.Command{Type: command.TypeKVFlush, Flags: command.FlagFlushAll})
	for range 2 * (5 * dropBudget / reclaimStep) {
		add(*command.NoopCommand(nil))
		add(*command.SetAddCommand([]byte("s"), fields(fmt.Sprint("n", len(logs)), 2)))
	}

	one, all := newHarness(t), newHarness(t)
	all.f.ApplyBatch(logs[:5])
	var restored *harness
	for i, l := range logs {
		one.f.Apply(l)
		if i >= 5 && i%3 == 0 {
			all.f.ApplyBatch(logs[max(5, i-2) : i+1])
		}
		if i == 6 {
			restored = newHarness(t)
			if err := restored.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, one.f)))); err != nil {
				t.Fatal(err)
			}
			if restored.f.Graves() == 0 {
				t.Fatal("the snapshot was taken with no graves")
			}
		} else if restored != nil {
			restored.f.Apply(l)
		}
		if i >= 5 && i%3 == 0 {
			ho, _ := one.f.DataHash()
			ha, _ := all.f.DataHash()
			hr, _ := restored.f.DataHash()
			if ho != ha || ho != hr {
				t.Fatalf("at entry %d the data differs: one by one %x, batched %x, restored %x", i+1, ho[:4], ha[:4], hr[:4])
			}
		}
	}
	for _, h := range []*harness{one, all, restored} {
		if h.f.Graves() != 0 || h.f.AppliedIndex() != uint64(len(logs)) {
			t.Fatalf("at %d: %d graves left", h.f.AppliedIndex(), h.f.Graves())
		}
	}
}
