package raftstore

import (
	"testing"
	"time"

	"github.com/idemgate/idemgate/fsm"
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
	first, err := f.KVSet(ctx, []byte("lock"), []byte("a"), time.Minute, fsm.SetNX, 0)
	if err != nil || first.Code != fsm.CodeCreated {
		t.Fatalf("first SETNX = %+v, %v", first, err)
	}
	if err := f.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	before := c.Store(leader).Raft().LastIndex()
	for i, s := range []*Store{f, c.Store(leader)} {
		for j := 0; j < 5; j++ {
			r, err := s.KVSet(ctx, []byte("lock"), []byte("b"), time.Minute, fsm.SetNX, 0)
			if err != nil || r.Code != fsm.CodeExists || string(r.Value) != "a" || r.Version != first.Version {
				t.Fatalf("store %d: refused SETNX = %+v, %v; want exists with a@%d", i, r, err, first.Version)
			}
		}
	}
	if after := c.Store(leader).Raft().LastIndex(); after != before {
		t.Fatalf("10 refused SETNX grew the log from %d to %d", before, after)
	}
	// A retry under a request id goes through the state machine.
	rctx := WithRequestID(ctx, RequestIDFor([]byte("t"), []byte("k")))
	if r, err := f.KVSet(rctx, []byte("lock"), []byte("b"), time.Minute, fsm.SetNX, 0); err != nil || r.Code != fsm.CodeExists {
		t.Fatalf("SETNX with a request id = %+v, %v", r, err)
	}
	if after := c.Store(leader).Raft().LastIndex(); after == before {
		t.Fatal("a SETNX carrying a request id was not proposed")
	}
	// Deleted through the leader: the follower's read confirms it is gone.
	if _, err := c.Store(leader).KVGetDel(ctx, []byte("lock"), 0); err != nil {
		t.Fatal(err)
	}
	if r, err := f.KVSet(ctx, []byte("lock"), []byte("c"), time.Minute, fsm.SetNX, 0); err != nil || r.Code != fsm.CodeCreated {
		t.Fatalf("SETNX after the delete = %+v, %v; want created", r, err)
	}
}
