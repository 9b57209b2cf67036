package raftstore

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/fsm"
)

// TestExpiryBacklog: more keys due than one sweep removes show in the
// leader's backlog (idemgate_expiry_backlog) until a sweep takes them.
func TestExpiryBacklog(t *testing.T) {
	c := StartTestCluster(t, 1, func(cfg *Config) { cfg.SweepInterval = time.Hour })
	s := c.Store(0)
	ctx := ctxT(t, 60*time.Second)
	const keys = 5000
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < keys; i += 32 {
				if _, err := s.KVSet(ctx, []byte(fmt.Sprintf("e%d", i)), []byte("v"), time.Millisecond, fsm.SetPlain, 0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	time.Sleep(5 * time.Millisecond) // all due
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
