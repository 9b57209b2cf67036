package raftstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/idemgate/idemgate/command"
)

// TestFollowerReadNudgesCommit: with Raft's commit tick a minute long, a
// follower that wrote a key (through the leader) reads it back at once:
// the leader appended a barrier that told it the commit index, where
// without one its read would wait for the tick (and time out after 10 s).
// Reads with no write between them append none: the read index stops at
// the last write, which the follower already knows committed.
func TestFollowerReadNudgesCommit(t *testing.T) {
	t.Parallel()
	// Started without StartTestCluster's wait for every node to apply the
	// cluster id: a follower learns that it committed at the tick.
	c := NewTestCluster(t, 3, func(cfg *Config) { cfg.CommitTimeout = time.Minute })
	for i := range c.Cfgs {
		c.Start(i)
	}
	leader := c.WaitLeader(10 * time.Second)
	ld, f := c.Stores[leader], c.Stores[(leader+1)%3]
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		key := []byte(fmt.Sprint("nudged-", i))
		if _, err := f.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: key, Value: []byte("v")})); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if err := f.Barrier(ctx); err != nil {
			t.Fatalf("read %d after its write, on the follower: %v", i, err)
		}
		cancel()
		if e, err := f.FSM().KV(key, time.Now()); err != nil || string(e.Value) != "v" {
			t.Fatalf("read %d: the follower's state has %q (%v) after the barrier", i, e.Value, err)
		}
	}
	nudges := testutil.ToFloat64(ld.metrics.commitNudges)
	if nudges == 0 {
		t.Fatal("the follower's reads were served, but the leader appended no barrier")
	}
	for i := range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := f.Barrier(ctx); err != nil {
			t.Fatalf("read %d with no write before it: %v", i, err)
		}
		cancel()
	}
	if got := testutil.ToFloat64(ld.metrics.commitNudges); got != nudges {
		t.Fatalf("reads with no write between them appended %v barriers", got-nudges)
	}
	t.Logf("%v barriers for 5 writes read back on a follower", nudges)
}

// BenchmarkReadAfterWrite: a client writes a key through a node, then
// reads there (a linearizable read: the read index, applied), one after
// the other, on a 3-node cluster with Raft's commit tick as in
// production; the leader is the baseline. Without the nudge a follower's
// read waits for the tick.
func BenchmarkReadAfterWrite(b *testing.B) {
	c := NewTestCluster(b, 3, func(cfg *Config) { cfg.CommitTimeout = DefaultConfig().CommitTimeout })
	for i := range c.Cfgs {
		c.Start(i)
	}
	leader := c.WaitLeader(10 * time.Second)
	for _, node := range []struct {
		name string
		i    int
	}{{"leader", leader}, {"follower", (leader + 1) % 3}} {
		b.Run(node.name, func(b *testing.B) {
			s := c.Store(node.i)
			for i := 0; b.Loop(); i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				key := []byte(fmt.Sprint("raw-", i))
				if _, err := s.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: key, Value: []byte("v")})); err != nil {
					b.Fatal(err)
				}
				if err := s.Barrier(ctx); err != nil {
					b.Fatal(err)
				}
				cancel()
			}
		})
	}
}
