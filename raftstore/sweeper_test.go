package raftstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// setDueKeys sets keys KV keys that live a millisecond, from 32 clients,
// and returns once all are due.
func setDueKeys(ctx context.Context, t *testing.T, s *Store, keys int) {
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < keys; i += 32 {
				if _, err := s.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprintf("e%d", i)), Value: []byte("v"), TTL: time.Millisecond})); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	time.Sleep(5 * time.Millisecond) // all due
}

// TestExpiryBacklog: more keys due than one sweep removes show in the
// leader's backlog (idemgate_expiry_backlog) until a sweep takes them.
func TestExpiryBacklog(t *testing.T) {
	c := StartTestCluster(t, 1, func(cfg *Config) { cfg.Sweeper.Interval = time.Hour })
	s := c.Store(0)
	ctx := ctxT(t, 60*time.Second)
	const keys = 5000
	setDueKeys(ctx, t, s, keys)
	n, err := s.sweeper.SweepOnce(ctx)
	if err != nil || n != 4096 || s.sweeper.Backlog() != keys-4096 {
		t.Fatalf("one sweep: %d expired (%v), backlog %d; want 4096 and %d", n, err, s.sweeper.Backlog(), keys-4096)
	}
	// The next sweep takes the rest, and the backlog is gone.
	if n, err := s.sweeper.SweepOnce(ctx); err != nil || n != keys-4096 || s.sweeper.Backlog() != 0 {
		t.Fatalf("second sweep: %d expired (%v), backlog %d", n, err, s.sweeper.Backlog())
	}
	if left, err := s.CountDue(time.Now(), keys); err != nil || left != 0 {
		t.Fatalf("%d still due (%v)", left, err)
	}
}

// TestConfiguredSweeper: the sweeper of a real store uses the batch size
// and the bound on batches it is configured with. Keys due at once expire in
// ceil(keys / batch) expire proposals, at most max_batches per sweep,
// counted as log entries applied.
func TestConfiguredSweeper(t *testing.T) {
	const keys, batch, batches = 1000, 37, 5
	c := StartTestCluster(t, 1, func(cfg *Config) {
		// An hour: only the sweeps this test makes run after the first.
		cfg.Sweeper = ttl.SweeperConfig{Interval: time.Hour, BatchSize: batch, MaxBatches: batches, Pause: time.Millisecond}
	})
	s := c.Store(0)
	ctx := ctxT(t, 60*time.Second)
	setDueKeys(ctx, t, s, keys)
	if due, err := s.CountDue(time.Now(), 2*keys); err != nil || due != keys {
		t.Fatalf("%d due (%v), want %d", due, err, keys)
	}
	sweeps, proposals, expired := 0, uint64(0), 0
	for expired < keys {
		before := s.fsm.AppliedIndex() // stored before each command is answered, unlike raft's
		n, err := s.sweeper.SweepOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p := s.fsm.AppliedIndex() - before
		if want := uint64((n + batch - 1) / batch); p != want || n > batch*batches {
			t.Fatalf("sweep %d: %d expired in %d proposals; want at most %d, in %d proposals of up to %d", sweeps+1, n, p, batch*batches, want, batch)
		}
		// The backlog is counted at most once an Interval: after the first.
		if left := keys - n; sweeps == 0 && s.sweeper.Backlog() != int64(left) {
			t.Fatalf("sweep %d: backlog %d, want %d", sweeps+1, s.sweeper.Backlog(), left)
		}
		sweeps, proposals, expired = sweeps+1, proposals+p, expired+n
		if n == 0 {
			t.Fatalf("sweep %d expired nothing, %d of %d done", sweeps, expired, keys)
		}
	}
	wantSweeps, wantProposals := (keys+batch*batches-1)/(batch*batches), uint64((keys+batch-1)/batch)
	if expired != keys || sweeps != wantSweeps || proposals != wantProposals {
		t.Fatalf("%d expired in %d sweeps of %d proposals, want %d in %d of %d", expired, sweeps, proposals, keys, wantSweeps, wantProposals)
	}
	if got := s.fsm.ExpiredCount(ttl.KindKV); got != keys {
		t.Fatalf("the state machine counts %d expired, want %d", got, keys)
	}
}

// TestExpireSplitsByCommandLimit: keys long enough that one sweep batch
// would be over the command limit still expire, in several commands, in
// one sweep; before, the oversized command was refused at every sweep and
// nothing behind it expired.
func TestExpireSplitsByCommandLimit(t *testing.T) {
	c := StartTestCluster(t, 1, func(cfg *Config) {
		cfg.Sweeper.Interval = time.Hour
		cfg.MaxCommandBytes = 8 << 10
	})
	s := c.Store(0)
	ctx := ctxT(t, 60*time.Second)
	const keys = 200
	long := make([]byte, 500) // 200 × ~530 bytes: about 13 times the limit
	for i := range long {
		long[i] = 'k'
	}
	for i := 0; i < keys; i++ {
		if _, err := s.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: fmt.Appendf(append([]byte(nil), long...), "%d", i), Value: []byte("v"), TTL: time.Millisecond})); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(5 * time.Millisecond)
	if n, err := s.sweeper.SweepOnce(ctx); err != nil || n != keys {
		t.Fatalf("one sweep expired %d (%v), want all %d", n, err, keys)
	}
	if left, err := s.CountDue(time.Now(), keys); err != nil || left != 0 {
		t.Fatalf("%d still due (%v)", left, err)
	}
}
