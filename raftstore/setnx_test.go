package raftstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// TestRefusedSETNXWritesNothing: a SETNX on a live key is answered from a
// linearizable read, with no log entry; one that carries a request id (an
// API retry) is still proposed; and a key deleted through another node is
// created, though this node's state still held it a moment ago.
func TestRefusedSETNXWritesNothing(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 20*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	f := c.Store((leader + 1) % 3)
	first, err := f.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("lock"), Value: []byte("a"), TTL: time.Minute, Mode: command.SetNX}))
	if err != nil || first.Code != command.CodeCreated {
		t.Fatalf("first SETNX = %+v, %v", first, err)
	}
	if err := f.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	before := c.Store(leader).Raft().LastIndex()
	for i, s := range []*Store{f, c.Store(leader)} {
		for j := 0; j < 5; j++ {
			r, err := s.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("lock"), Value: []byte("b"), TTL: time.Minute, Mode: command.SetNX}))
			if err != nil || r.Code != command.CodeExists || string(r.Value) != "a" || r.Version != first.Version {
				t.Fatalf("store %d: refused SETNX = %+v, %v; want exists with a@%d", i, r, err, first.Version)
			}
		}
	}
	if n := commandsAfter(t, c.Store(leader), before); n != 0 {
		t.Fatalf("10 refused SETNX appended %d commands to the log", n)
	}
	// A retry under a request id goes through the state machine.
	rctx := storeapi.WithRequestID(ctx, storeapi.RequestIDFor([]byte("t"), []byte("k")))
	if r, err := f.ApplyKV(rctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("lock"), Value: []byte("b"), TTL: time.Minute, Mode: command.SetNX})); err != nil || r.Code != command.CodeExists {
		t.Fatalf("SETNX with a request id = %+v, %v", r, err)
	}
	if n := commandsAfter(t, c.Store(leader), before); n == 0 {
		t.Fatal("a SETNX carrying a request id was not proposed")
	}
	// Deleted through the leader: the follower's read confirms it is gone.
	if r, err := c.Store(leader).ApplyKV(ctx, command.KVGetDelCommand([]byte("lock"), 0)); err != nil || r.Code != command.CodeOK {
		t.Fatalf("GETDEL = %+v, %v", r, err)
	}
	if r, err := f.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("lock"), Value: []byte("c"), TTL: time.Minute, Mode: command.SetNX})); err != nil || r.Code != command.CodeCreated {
		t.Fatalf("SETNX after the delete = %+v, %v; want created", r, err)
	}
}

// TestPipelinedSETNXIsARead: in a pipeline (ApplyInOrder, Redis's SET NX
// and SETNX), from a follower and from the leader, a SETNX on a live key
// is answered from a read with no log entry, and one behind a GETDEL of
// its key in the same pipeline sees the GETDEL: it creates the key, and
// the SETNX behind it is refused with the value it wrote.
func TestPipelinedSETNXIsARead(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 20*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	setnx := func(v string) *command.Command {
		return command.KVSetCommand(command.KVSetRequest{Key: []byte("lock"), Value: []byte(v), TTL: time.Minute, Mode: command.SetNX})
	}
	for round, s := range []*Store{c.Store((leader + 1) % 3), c.Store(leader)} {
		owner := []string{"a", "b"}[round]
		if r, err := s.ApplyKV(ctx, setnx(owner)); err != nil || r.Code != command.CodeCreated {
			t.Fatalf("round %d: first SETNX = %+v, %v", round, r, err)
		}
		if err := s.Barrier(ctx); err != nil {
			t.Fatal(err)
		}
		before := c.Store(leader).Raft().LastIndex()
		out := s.ApplyInOrder(ctx, []*command.Command{setnx("x"), setnx("y"), setnx("z")})
		for i, r := range out {
			if r.Err != nil || r.Res.Code != command.CodeExists || string(r.Res.Value) != owner {
				t.Fatalf("round %d: pipelined SETNX %d = %+v; want exists with %s", round, i, r, owner)
			}
		}
		if n := commandsAfter(t, c.Store(leader), before); n != 0 {
			t.Fatalf("round %d: 3 refused SETNX appended %d commands to the log", round, n)
		}
		out = s.ApplyInOrder(ctx, []*command.Command{setnx("x"), command.KVGetDelCommand([]byte("lock"), 0), setnx("new"), setnx("late")})
		for i, want := range []struct {
			code  command.Code
			value string
		}{{command.CodeExists, owner}, {command.CodeOK, owner}, {command.CodeCreated, ""}, {command.CodeExists, "new"}} {
			if r := out[i]; r.Err != nil || r.Res.Code != want.code || string(r.Res.Value) != want.value {
				t.Fatalf("round %d: op %d = %+v, want %v %q", round, i, r, want.code, want.value)
			}
		}
		if r, err := s.ApplyKV(ctx, command.KVDeleteCommand([]byte("lock"))); err != nil || r.Code != command.CodeOK {
			t.Fatalf("round %d: DEL = %+v, %v", round, r, err)
		}
	}
}

// TestSETNXAfterDeleteElsewhere: a SETNX on a follower whose state still
// holds the key live (its apply held: the DEL that freed it applied on the
// leader only, as a lock released a moment ago through this node) is
// proposed on the leader's word and creates the key; the old shortcut
// waited instead for this node to apply the read index, which it cannot
// do while held, until the barrier's own time ran out.
func TestSETNXAfterDeleteElsewhere(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	li := c.WaitLeader(5 * time.Second)
	l, f := c.Store(li), c.Store((li+1)%3)
	setnx := func(v string) *command.Command {
		return command.KVSetCommand(command.KVSetRequest{Key: []byte("lock"), Value: []byte(v), TTL: time.Minute, Mode: command.SetNX})
	}
	if r, err := f.ApplyKV(ctx, setnx("a")); err != nil || r.Code != command.CodeCreated {
		t.Fatalf("first SETNX = %+v, %v", r, err)
	}
	st := holdApply(ctx, t, l, f)
	if r, err := l.ApplyKV(ctx, command.KVDeleteCommand([]byte("lock"))); err != nil || r.Code != command.CodeOK {
		t.Fatalf("DEL = %+v, %v", r, err)
	}
	barriers := countBarriers(f)
	if r, err := f.ApplyKV(ctx, setnx("b")); err != nil || r.Code != command.CodeCreated {
		t.Fatalf("SETNX on the held follower = %+v, %v; want created", r, err)
	}
	if n := barriers.Load(); n != 0 {
		t.Fatalf("the SETNX took %d read indexes on a follower that cannot apply them; want none", n)
	}
	if e, err := f.fsm.KV([]byte("lock"), time.Now()); err != nil || string(e.Value) != "a" {
		t.Fatalf("the held follower's own state = %q, %v; want the lock it still holds", e.Value, err)
	}
	// Live on the leader too: "exists" is confirmed by the read index,
	// which needs this node's apply.
	st.free()
	out := f.ApplyInOrder(ctx, []*command.Command{setnx("c")})
	if r := out[0]; r.Err != nil || r.Res.Code != command.CodeExists || string(r.Res.Value) != "b" {
		t.Fatalf("SETNX of the key taken = %+v; want exists with b", r)
	}
}

// countBarriers counts the read-index rounds s runs from now on.
func countBarriers(s *Store) *atomic.Int64 {
	var n atomic.Int64
	s.reads.mu.Lock()
	defer s.reads.mu.Unlock()
	barrier := s.reads.barrier
	s.reads.barrier = func(ctx context.Context) error {
		n.Add(1)
		return barrier(ctx)
	}
	return &n
}

// commandsAfter counts the commands in s's log after index from: a read
// appends none, though a follower's may have the leader append a barrier
// (nudge.go).
func commandsAfter(t *testing.T, s *Store, from uint64) int {
	t.Helper()
	n := 0
	for i := from + 1; i <= s.Raft().LastIndex(); i++ {
		var l raft.Log
		if err := s.cache.GetLog(i, &l); err != nil {
			t.Fatalf("log entry %d: %v", i, err)
		}
		if l.Type == raft.LogCommand {
			n++
		}
	}
	return n
}
