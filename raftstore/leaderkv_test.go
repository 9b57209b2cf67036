package raftstore

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// stalledApply holds a node's apply in its KV observer from the first
// batch that changes a key until release: the node goes on storing the
// log (the leader keeps its quorum) but its state stays where it was.
type stalledApply struct {
	once     sync.Once
	stalled  chan struct{}
	release  chan struct{}
	released sync.Once
}

// holdApply holds f's apply once f has applied what came before: it
// waits for f's barrier, then for a write through l to reach f's
// observer.
func holdApply(ctx context.Context, t *testing.T, l, f *Store) *stalledApply {
	t.Helper()
	if err := f.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	st := &stalledApply{stalled: make(chan struct{}), release: make(chan struct{})}
	f.OnKVChanged(st)
	t.Cleanup(st.free)
	if _, err := l.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("stall"), Value: []byte("x")})); err != nil {
		t.Fatal(err)
	}
	<-st.stalled
	return st
}

func (st *stalledApply) KVWatching() bool { return true }

func (st *stalledApply) KVChanged([][]byte, []command.ReqID, bool) {
	st.once.Do(func() { close(st.stalled) })
	<-st.release
}

func (st *stalledApply) free() { st.released.Do(func() { close(st.release) }) }

// TestLeaderKV: a follower whose apply is held reads the leader's state
// through LeaderKV (a key deleted there is absent, one written there has
// the leader's value and version) while its own state still holds what
// it had; a reserved key and a malformed forwarded read are refused.
func TestLeaderKV(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	li := c.WaitLeader(5 * time.Second)
	l, f := c.Store(li), c.Store((li+1)%3)
	if _, err := l.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("gone"), Value: []byte("a")})); err != nil {
		t.Fatal(err)
	}
	st := holdApply(ctx, t, l, f)
	if _, err := l.ApplyKV(ctx, command.KVDeleteCommand([]byte("gone"))); err != nil {
		t.Fatal(err)
	}
	written, err := l.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("new"), Value: []byte("b")}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.KV(ctx, []byte("gone"), true); err != nil {
		t.Fatalf("the held follower's own state lost the key: %v", err)
	}
	if _, ok, err := f.LeaderKV(ctx, []byte("gone"), time.Now()); ok || err != nil {
		t.Fatalf("LeaderKV of a key deleted on the leader = %v, %v; want absent", ok, err)
	}
	e, ok, err := f.LeaderKV(ctx, []byte("new"), time.Now())
	if !ok || err != nil || string(e.Value) != "b" || e.Version != written.Version {
		t.Fatalf("LeaderKV of a key written on the leader = %+v %v, %v; want b@%d", e, ok, err, written.Version)
	}
	if _, _, err := f.LeaderKV(ctx, []byte("\x00idem"), time.Now()); !errors.Is(err, storeapi.ErrReservedKey) {
		t.Fatalf("LeaderKV of a reserved key = %v, want ErrReservedKey", err)
	}
	for _, payload := range [][]byte{nil, {1, 2, 3}, append(binary.BigEndian.AppendUint64(nil, 1), "\x00idem"...)} {
		if _, err := l.serveLeaderKV(payload); err == nil {
			t.Errorf("a forwarded read of %x was answered", payload)
		}
	}
	if _, err := f.serveLeaderKV(append(binary.BigEndian.AppendUint64(nil, uint64(time.Now().UnixNano())), "new"...)); !errors.Is(err, storeapi.ErrNotLeader) {
		t.Errorf("a follower answered a forwarded leader read: %v", err)
	}
	st.free()
	if err := f.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
}
