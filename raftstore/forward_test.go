package raftstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/storeapi"
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
	if err := forwardedRetries(t); err != nil {
		t.Fatal(err)
	}
}

// forwardedRetries runs the writes through a follower while its forwarding
// connections are cut, and reports the first double apply.
func forwardedRetries(t *testing.T) error {
	c := StartTestCluster(t, 3, nil)
	leader := c.WaitLeader(5 * time.Second)
	follower := c.Stores[(leader+1)%3]
	ctx := ctxT(t, 60*time.Second)

	// Writers run until at least minCuts connections were cut under them
	// (and at least 640 writes), bounded by the context.
	const minCuts = 20
	var cuts atomic.Int64
	stop := make(chan struct{})
	var cutter sync.WaitGroup
	cutter.Add(1)
	go func() {
		defer cutter.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(5+rand.IntN(35)) * time.Millisecond):
				cuts.Add(int64(follower.cutForwarding()))
			}
		}
	}()
	var wg sync.WaitGroup
	var writes atomic.Int64
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && (i < 40 || cuts.Load() < minCuts); i++ {
				k := []byte(fmt.Sprintf("w%d-%d", w, i))
				res, err := follower.ApplyKV(ctx, fsm.KVSetCommand(fsm.KVSetRequest{Key: k, Value: []byte("v"), Mode: fsm.SetNX}))
				if err != nil {
					errs <- fmt.Errorf("%s: %v", k, err)
					return
				}
				if res.Code != fsm.CodeCreated {
					errs <- fmt.Errorf("%s: first SETNX answered %v: a retry was applied twice", k, res.Err())
					return
				}
				writes.Add(1)
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	cutter.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	if cuts.Load() < minCuts {
		t.Fatalf("only %d connections were cut: the test did not exercise retries", cuts.Load())
	}
	t.Logf("%d SETNX through a follower, %d forwarding connections cut, each applied once", writes.Load(), cuts.Load())
	c.WaitConverged(10 * time.Second)
	return nil
}

// TestWireErrorsKeepTheirIdentity: every error a leader sends back by code
// is the same sentinel on the follower, message and all; an error without
// a code keeps its message.
func TestWireErrorsKeepTheirIdentity(t *testing.T) {
	for code, known := range wireErrors {
		if known == nil {
			continue
		}
		sent := fmt.Errorf("%w: detail %d", known, code)
		status, payload := errAnswer(sent)
		got := answerErr(status, payload, "n1")
		if status != statusError || !errors.Is(got, known) || got.Error() != sent.Error() {
			t.Errorf("code %d: %v came back as %v (status %d)", code, sent, got, status)
		}
	}
	status, payload := errAnswer(errors.New("something else"))
	if got := answerErr(status, payload, "n1"); got.Error() != "something else" {
		t.Errorf("an error without a code came back as %q", got)
	}
	for _, tc := range []struct {
		err  error
		want error
	}{{storeapi.ErrNotLeader, storeapi.ErrNotLeader}, {fmt.Errorf("%w: lost", errRetry), errRetry}, {storeapi.ErrShutdown, errRetry}} {
		status, payload := errAnswer(tc.err)
		if got := answerErr(status, payload, "n1"); !errors.Is(got, tc.want) {
			t.Errorf("%v came back as %v, want %v", tc.err, got, tc.want)
		}
	}
}
