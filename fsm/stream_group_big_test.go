package fsm

import (
	"strconv"
	"testing"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// TestStreamGroupPendingBig: a group of 10^5 pending entries, made by
// one XREADGROUP (under the reply bound), summarised, claimed, acked and
// dropped with its consumer, then the group: each answer exact, and no
// entry of the group's left in the element bucket.
func TestStreamGroupPendingBig(t *testing.T) {
	const n = 100_000
	h := newHarness(t)
	key := []byte("big")
	var cs []command.Command
	for i := 1; i <= n; i++ {
		cs = append(cs, *command.XAddCommand(key, command.XAddExplicit, command.StreamID{Ms: uint64(i), Seq: 1}, [][]byte{[]byte("f"), []byte("v")}, command.StreamTrim{}, false))
		if len(cs) == 1000 {
			h.applyBatch(cs...)
			cs = nil
		}
	}
	grp := func(op command.GroupOp, a command.GroupArgs) *command.Result {
		a.Group = []byte("g")
		return h.apply(*command.StreamGroupCommand(key, nil, op, a))
	}
	read := func(op command.GroupOp, a command.GroupArgs) *command.Result {
		a.Group = []byte("g")
		return h.apply(*command.StreamGroupReadCommand(key, op, a))
	}
	if r := grp(command.GroupCreate, command.GroupArgs{}); r.Code != command.CodeOK {
		t.Fatalf("XGROUP CREATE: %+v", r)
	}
	r := grp(command.GroupRead, command.GroupArgs{Consumer: []byte("c"), IDs: []command.StreamID{command.MaxStreamID}})
	parts, err := command.DecodeElems(r.Value)
	if err != nil || len(parts) != 2 {
		t.Fatalf("XREADGROUP of %d: %v %v", n, r.Code, err)
	}
	if es, err := command.DecodeGroupEntries(parts[1]); err != nil || len(es) != n || es[n-1].ID != (command.StreamID{Ms: n, Seq: 1}) {
		t.Fatalf("XREADGROUP delivered %d entries (%v), want %d", len(es), err, n)
	}
	summary := func() []string {
		r := read(command.GroupPendingSummary, command.GroupArgs{})
		p, _ := command.DecodeElems(r.Value)
		first, _ := command.StreamIDOf(p[1])
		last, _ := command.StreamIDOf(p[2])
		holders, _ := command.DecodeElems(p[3])
		out := []string{strconv.FormatInt(command.NumOf(p[0]), 10), first.String(), last.String()}
		for i := 0; i+1 < len(holders); i += 2 {
			out = append(out, string(holders[i])+"="+strconv.FormatInt(command.NumOf(holders[i+1]), 10))
		}
		return out
	}
	if got := summary(); len(got) != 4 || got[0] != "100000" || got[1] != "1-1" || got[2] != "100000-1" || got[3] != "c=100000" {
		t.Fatalf("XPENDING: %v", got)
	}
	r = grp(command.GroupAutoClaim, command.GroupArgs{Consumer: []byte("d"), ID: command.StreamID{Ms: 50000}, Count: 2, Flags: command.GroupJustID})
	p, _ := command.DecodeElems(r.Value)
	if next, _ := command.StreamIDOf(p[0]); next != (command.StreamID{Ms: 50002, Seq: 1}) {
		t.Fatalf("XAUTOCLAIM's cursor %v, want 50002-1", next)
	}
	r = grp(command.GroupAutoClaim, command.GroupArgs{Consumer: []byte("d"), MinIdle: 3_600_000, Count: 10})
	p, _ = command.DecodeElems(r.Value)
	if next, _ := command.StreamIDOf(p[0]); next != (command.StreamID{Ms: 101, Seq: 1}) {
		t.Fatalf("XAUTOCLAIM of none idle enough: cursor %v, want 101-1 (10 times 10 looked at)", next)
	}
	if r := grp(command.GroupAck, command.GroupArgs{IDs: []command.StreamID{{Ms: 1, Seq: 1}, {Ms: 2, Seq: 1}, {Ms: 3, Seq: 1}}}); string(r.Value) != "3" {
		t.Fatalf("XACK: %q", r.Value)
	}
	if r := grp(command.GroupDelConsumer, command.GroupArgs{Consumer: []byte("c")}); string(r.Value) != "99995" {
		t.Fatalf("XGROUP DELCONSUMER: %q, want 99995", r.Value)
	}
	if got := summary(); len(got) != 4 || got[0] != "2" || got[1] != "50000-1" || got[2] != "50001-1" || got[3] != "d=2" {
		t.Fatalf("XPENDING after DELCONSUMER: %v", got)
	}
	if r := grp(command.GroupDestroy, command.GroupArgs{}); string(r.Value) != "1" {
		t.Fatalf("XGROUP DESTROY: %+v", r)
	}
	left := 0
	if err := h.f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketElems).ForEach(func(k, _ []byte) error {
			if len(k) > 8 && k[8] >= command.TagStreamGroup {
				left++
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d group entries left after DESTROY", left)
	}
}
