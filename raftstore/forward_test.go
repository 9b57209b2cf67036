package raftstore

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/fsm"
)

// cutForwarding closes this node's forwarding connections, failing every
// forwarded call in flight: their fate is unknown to the caller.
func (s *Store) cutForwarding() int {
	s.fwdMu.Lock()
	defer s.fwdMu.Unlock()
	n := 0
	for _, c := range s.fwd {
		if c.alive() {
			c.fail()
			n++
		}
	}
	return n
}

// TestForwardedRetryAppliesOnce: SETNX on fresh keys through a follower
// while its connections to the leader are cut again and again. A cut call
// is retried with the same request id; had any retry applied twice, its
// caller would see "exists" for a key it created itself.
func TestForwardedRetryAppliesOnce(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	leader := c.WaitLeader(5 * time.Second)
	follower := c.Stores[(leader+1)%3]
	ctx := ctxT(t, 60*time.Second)

	stop := make(chan struct{})
	cuts := 0
	var cutter sync.WaitGroup
	cutter.Add(1)
	go func() {
		defer cutter.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(5+rand.IntN(35)) * time.Millisecond):
				cuts += follower.cutForwarding()
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				k := []byte(fmt.Sprintf("w%d-%d", w, i))
				res, err := follower.KVSet(ctx, k, []byte("v"), 0, fsm.SetNX, 0)
				if err != nil {
					errs <- fmt.Errorf("%s: %v", k, err)
					return
				}
				if res.Code != fsm.CodeCreated {
					errs <- fmt.Errorf("%s: first SETNX answered %v: a retry was applied twice", k, res.Err())
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	cutter.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if cuts < 10 {
		t.Fatalf("only %d connections were cut: the test did not exercise retries", cuts)
	}
	t.Logf("640 SETNX through a follower, %d forwarding connections cut, each applied once", cuts)
	c.WaitConverged(10 * time.Second)
}
