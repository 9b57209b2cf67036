package resp

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"
)

// scriptSlots bound the scripts this node runs, and compiles, at once
// (Config.ScriptRuns), read-only ones included: a script is pure CPU
// until it ends or its time limit stops it, and 64 that never end, on a
// node with as many goroutines runnable as it has cores, starved raft's
// heartbeats until the cluster elected another leader. With at most half
// the cores running scripts, the rest are left to raft, the listeners and
// the collector. The scripts past the cap wait, in order, up to
// ScriptQueueWait; then they are refused with TRYAGAIN and nothing run,
// which go-redis and the Redis cluster clients retry after a pause.
//
// A run gives its slot back while it waits on the store for a read (a
// follower's read from the leader, a barrier): the slot bounds CPU, not
// waiting.
type scriptSlots struct {
	ch   chan struct{}
	wait time.Duration
}

// DefaultScriptRuns is half the cores Go schedules on, at least one.
func DefaultScriptRuns() int { return max(1, runtime.GOMAXPROCS(0)/2) }

func newScriptSlots(n int, wait time.Duration) *scriptSlots {
	return &scriptSlots{ch: make(chan struct{}, n), wait: wait}
}

// msgScriptsBusy is the refusal of a script that waited its whole
// ScriptQueueWait for a slot. TRYAGAIN is Redis's "retry later" that
// clients retry on their own (go-redis, redis-py's and rueidis's cluster
// clients); Redis's own BUSY means another script holds the server, and
// clients answer it to their caller.
const msgScriptsBusy = "TRYAGAIN too many scripts running on this node (at most %d at once); this one waited %s for its turn and was not run; retry"

// errScriptsBusy is take's error when the wait ran out.
var errScriptsBusy = errors.New("scripts busy")

// busyError is errScriptsBusy as its reply.
type busyError struct{ text string }

func (e busyError) Error() string { return e.text }
func (e busyError) Unwrap() error { return errScriptsBusy }

// take waits for a slot, up to the queue wait and ctx; the error is the
// reply to give (TRYAGAIN, or ctx's).
func (s *scriptSlots) take(ctx context.Context) error {
	select {
	case s.ch <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(s.wait)
	defer t.Stop()
	select {
	case s.ch <- struct{}{}:
		return nil
	case <-t.C:
		return busyError{fmt.Sprintf(msgScriptsBusy, cap(s.ch), s.wait)}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retake waits for a slot again after a wait on the store, up to ctx only:
// the script was admitted once, and holds what it read.
func (s *scriptSlots) retake(ctx context.Context) error {
	select {
	case s.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *scriptSlots) give() { <-s.ch }

// slotRefusal is the reply to an error of take or of a compile: its own
// text (TRYAGAIN, a compile error, a script too large) or, for ctx's, the
// store's mapping.
func slotRefusal(err error) string {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return errorReply(err)
	}
	return err.Error()
}

// isBusy reports whether a refusal is msgScriptsBusy.
func isBusy(refusal string) bool { return strings.HasPrefix(refusal, "TRYAGAIN ") }
