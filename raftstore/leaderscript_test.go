package raftstore

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/storeapi"
)

// TestLeaderScript: a follower's request reaches the function the leader's
// listener registered, once, with the bound on its reply, and comes back
// with its answer; a leader that registered none runs nothing and the
// follower is told to run the script itself (nil, no error), as it is for
// a request over a forwarding frame; a follower never runs one forwarded
// to it.
func TestLeaderScript(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	li := c.WaitLeader(5 * time.Second)
	l, f := c.Store(li), c.Store((li+1)%3)

	if out, err := f.LeaderScript(ctx, []byte("req")); out != nil || err != nil {
		t.Fatalf("LeaderScript to a leader with no runner = %q, %v; want nil, nil (run it here)", out, err)
	}
	var calls atomic.Int64
	var bound atomic.Int64
	run := func(req []byte, attempt, maxReply int) ([]byte, error) {
		if attempt != 1 {
			return nil, errors.New("a second attempt with no connection lost")
		}
		calls.Add(1)
		bound.Store(int64(maxReply))
		if string(req) == "bad" {
			return nil, errors.New("a forwarded script's request is malformed")
		}
		return append([]byte("+ran "), req...), nil
	}
	for i := 0; i < 3; i++ {
		c.Store(i).OnLeaderScript(run)
	}
	if out, err := f.LeaderScript(ctx, []byte("req")); string(out) != "+ran req" || err != nil {
		t.Fatalf("LeaderScript = %q, %v; want +ran req", out, err)
	}
	if n, b := calls.Load(), bound.Load(); n != 1 || b <= 0 || b > int64(f.maxFrame()) {
		t.Fatalf("the runner ran %d times, its reply bounded at %d; want once, within a frame (%d)", n, b, f.maxFrame())
	}
	if _, err := f.LeaderScript(ctx, []byte("bad")); err == nil || err.Error() != "a forwarded script's request is malformed" {
		t.Fatalf("LeaderScript of a request the leader refuses = %v, want its error", err)
	}
	if out, err := f.LeaderScript(ctx, make([]byte, f.maxFrame())); out != nil || err != nil {
		t.Fatalf("LeaderScript over a frame = %q, %v; want nil, nil (not sent)", out, err)
	}
	if _, err := l.runLeaderScript(nil); err == nil {
		t.Fatal("a forwarded script without its attempt ran")
	}
	if _, err := f.runLeaderScript([]byte("\x01req")); !errors.Is(err, storeapi.ErrNotLeader) {
		t.Fatalf("a follower ran a forwarded script: %v", err)
	}
	if out, err := l.LeaderScript(ctx, []byte("own")); string(out) != "+ran own" || err != nil {
		t.Fatalf("LeaderScript on the leader = %q, %v; want +ran own", out, err)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("the runner ran %d times, want 3", n)
	}
}
