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
//
// The cap alone did not keep the leader on a shared 2-core machine: with
// one core given to one looping script, the kernel still shared the
// process's CPU between that thread and raft's, and the test cluster
// changed term in two runs of three. So scripts run (and compile) on OS
// threads of their own, at a lower priority (script_thread_linux.go):
// raft's threads come first whenever they want the CPU.
type scriptSlots struct {
	ch   chan struct{}
	wait time.Duration
	// idle hands a job to a worker thread waiting for one.
	idle chan *threadJob
}

// threadJob is a function run on a script thread; done gets what it
// panicked with, nil when it returned.
type threadJob struct {
	f    func()
	done chan any
}

// threadIdle is how long a script thread waits for another job before
// it ends.
const threadIdle = 10 * time.Second

// DefaultScriptRuns is half the cores Go schedules on, at least one.
func DefaultScriptRuns() int { return max(1, runtime.GOMAXPROCS(0)/2) }

func newScriptSlots(n int, wait time.Duration) *scriptSlots {
	return &scriptSlots{ch: make(chan struct{}, n), wait: wait, idle: make(chan *threadJob)}
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

// onThread runs f on a script thread (an idle one, or a new one) and
// returns when f has; a panic of f is raised again here, on the caller's
// goroutine.
func (s *scriptSlots) onThread(f func()) {
	j := &threadJob{f: f, done: make(chan any, 1)}
	select {
	case s.idle <- j:
	default:
		go s.thread(j)
	}
	if p := <-j.done; p != nil {
		panic(p)
	}
}

// thread is a script thread's goroutine: locked to its OS thread, whose
// priority it lowers, it runs j and then the jobs handed to it, until it
// has waited threadIdle for one. It never unlocks the thread, which ends
// with it (its priority cannot be raised back).
func (s *scriptSlots) thread(j *threadJob) {
	runtime.LockOSThread()
	lowerThreadPriority() // best effort: where it fails, the slots still bound the scripts
	t := time.NewTimer(threadIdle)
	defer t.Stop()
	for {
		j.run()
		t.Reset(threadIdle)
		select {
		case j = <-s.idle:
		case <-t.C:
			return
		}
	}
}

func (j *threadJob) run() {
	defer func() { j.done <- recover() }()
	j.f()
}

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
