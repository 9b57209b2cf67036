package raftstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	dto "github.com/prometheus/client_model/go"
)

// batchStats reads the leader's batch-size histogram: how many entries it
// proposed, with how many commands, and the largest bucket any reached.
func batchStats(t *testing.T, s *Store) (entries, commands uint64, maxBucket float64) {
	t.Helper()
	var m dto.Metric
	if err := s.metrics.batchSize.Write(&m); err != nil {
		t.Fatal(err)
	}
	h := m.GetHistogram()
	prev := uint64(0)
	for _, b := range h.GetBucket() {
		if b.GetCumulativeCount() > prev {
			maxBucket = b.GetUpperBound()
		}
		prev = b.GetCumulativeCount()
	}
	if h.GetSampleCount() > prev {
		maxBucket = -1 // above the last bucket
	}
	return h.GetSampleCount(), uint64(h.GetSampleSum()), maxBucket
}

// setnxLoad runs clients goroutines doing SETNX on unique keys through
// random nodes until stop; every answer must be Created: a command applied
// twice (a retry applied after its first attempt) would answer Exists the
// second time, unless the state machine recalled the first result.
func setnxLoad(t *testing.T, c *TestCluster, prefix string, clients int, value []byte, stop <-chan struct{}) (*atomic.Int64, func()) {
	var acked atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < clients; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s := c.Store((g + i) % len(c.Cfgs))
				if s == nil {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				res, err := s.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprintf("%s%d-%d", prefix, g, i)), Value: value, Mode: command.SetNX}))
				cancel()
				if err != nil {
					continue // unavailable: not acknowledged
				}
				if res.Code != command.CodeCreated {
					t.Errorf("SETNX %s%d-%d answered %v: applied twice", prefix, g, i, res.Code)
					return
				}
				acked.Add(1)
			}
		}()
	}
	return &acked, wg.Wait
}

// TestCoalescingAcrossLeaderChanges: under load the leader packs commands
// into batches; leadership moves three times mid-load, so batches in flight
// fail and their commands are retried (same request ids) through the next
// leader. Every SETNX is answered Created exactly as if applied once, and
// the replicas agree.
func TestCoalescingAcrossLeaderChanges(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	stop := make(chan struct{})
	acked, wait := setnxLoad(t, c, "c", 64, []byte("v"), stop)
	batched := false
	for i := 0; i < 3; i++ {
		time.Sleep(400 * time.Millisecond)
		leader := c.WaitLeader(10 * time.Second)
		if entries, commands, _ := batchStats(t, c.Store(leader)); commands > entries {
			batched = true
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := c.Store(leader).HandOff(ctx); err != nil {
			t.Logf("hand-off %d: %v", i, err)
		}
		cancel()
	}
	time.Sleep(400 * time.Millisecond)
	close(stop)
	wait()
	c.WaitConverged(20 * time.Second)
	if acked.Load() < 100 {
		t.Fatalf("only %d SETNX acknowledged", acked.Load())
	}
	if !batched {
		t.Fatal("64 concurrent clients never shared a log entry: no group commit happened")
	}
	t.Logf("%d SETNX acknowledged across 3 leader changes, each applied once", acked.Load())
}

// TestCoalescingByteBound: commands over half the byte bound each get an
// entry of their own; smaller ones share.
func TestCoalescingByteBound(t *testing.T) {
	c := StartTestCluster(t, 3, func(cfg *Config) { cfg.MaxBatchBytes = 1000 })
	leader := c.WaitLeader(5 * time.Second)
	for _, tc := range []struct {
		value   int
		maxCmds float64 // the largest histogram bucket a batch may reach
	}{{600, 1}, {200, 4}} {
		before, _, _ := batchStats(t, c.Store(leader))
		stop := make(chan struct{})
		acked, wait := setnxLoad(t, c, fmt.Sprint(tc.value, "-"), 32, make([]byte, tc.value), stop)
		time.Sleep(time.Second)
		close(stop)
		wait()
		entries, commands, maxBucket := batchStats(t, c.Store(leader))
		if acked.Load() == 0 || entries == before {
			t.Fatalf("%d-byte values: nothing written", tc.value)
		}
		if maxBucket < 0 || maxBucket > tc.maxCmds {
			t.Fatalf("%d-byte values with a 1000-byte bound: a batch reached the %v-command bucket, want at most %v",
				tc.value, maxBucket, tc.maxCmds)
		}
		t.Logf("%d-byte values: %d entries, %d commands, largest batch bucket %v", tc.value, entries, commands, maxBucket)
	}
}

// TestNoCoalescing: MaxBatchCommands 1 proposes every command alone.
func TestNoCoalescing(t *testing.T) {
	c := StartTestCluster(t, 3, func(cfg *Config) { cfg.MaxBatchCommands = 1 })
	leader := c.WaitLeader(5 * time.Second)
	stop := make(chan struct{})
	acked, wait := setnxLoad(t, c, "c", 32, []byte("v"), stop)
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wait()
	entries, commands, _ := batchStats(t, c.Store(leader))
	if acked.Load() == 0 || entries != commands {
		t.Fatalf("with MaxBatchCommands 1: %d entries for %d commands (%d acknowledged)", entries, commands, acked.Load())
	}
}

// TestForwardedConcurrentApplies: a follower's concurrent writes, which
// its connection packs into batch frames (the transport's
// TestForwardedAppliesShareFrames), each reach the leader once and are
// answered under their own request.
func TestForwardedConcurrentApplies(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	f := c.Store((leader + 1) % 3)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				res, err := f.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprintf("f%d-%d", g, i)), Value: []byte("v"), Mode: command.SetNX}))
				if err != nil || res.Code != command.CodeCreated {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d of 3,200 forwarded SETNX failed", failed.Load())
	}
	// Every node's own state, once they applied the same log: a loaded
	// machine may have moved the leadership since, which a linearizable
	// read would have to wait out.
	c.WaitConverged(10 * time.Second)
	for n := 0; n < 3; n++ {
		for g := 0; g < 64; g++ {
			for i := 0; i < 50; i++ {
				if _, err := c.Store(n).KV(ctx, []byte(fmt.Sprintf("f%d-%d", g, i)), true); err != nil {
					t.Fatalf("f%d-%d on node %d: %v", g, i, n, err)
				}
			}
		}
	}
}

// TestMaxBatchesInFlightBounds: a config outside 1..maxBatchesInFlight is
// refused, naming the field; the bounds themselves pass.
func TestMaxBatchesInFlightBounds(t *testing.T) {
	for _, tc := range []struct {
		n  int
		ok bool
	}{{-1, false}, {0, false}, {1, true}, {4, true}, {maxBatchesInFlight, true}, {maxBatchesInFlight + 1, false}, {1 << 30, false}} {
		c := testConfig("n1", "127.0.0.1:0", t.TempDir(), []Peer{{ID: "n1", RaftAddr: "127.0.0.1:0"}})
		c.MaxBatchesInFlight = tc.n
		err := c.Validate()
		if tc.ok && err != nil {
			t.Errorf("MaxBatchesInFlight %d: %v", tc.n, err)
		}
		if !tc.ok && (err == nil || err.Error() != "raftstore: MaxBatchesInFlight must be 1 to 64") {
			t.Errorf("MaxBatchesInFlight %d: got %v, want the bounds named", tc.n, err)
		}
	}
}
