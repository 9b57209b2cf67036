package raftstore

import (
	"sync/atomic"
	"time"
)

// leaderWake wakes the calls waiting out a retry backoff for a leader
// (leaderCall) when this node's view of the leader changes. Without it a
// call that found none, or a dead one, during a failover slept its
// backoff, which grows to over 100 ms, after the new leader was known:
// the first writes after an election waited for nothing.
type leaderWake struct {
	// ch is closed by the next wake; nil until a wait takes one. Atomic:
	// every write's call takes it, so it costs one load when one exists.
	ch atomic.Pointer[chan struct{}]
}

// wait is a channel closed at the next wake. Take it before looking at
// the leader: a change between the look and the wait then still wakes.
func (w *leaderWake) wait() <-chan struct{} {
	for {
		if p := w.ch.Load(); p != nil {
			return *p
		}
		ch := make(chan struct{})
		if w.ch.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

// wake wakes every call waiting since the last wake.
func (w *leaderWake) wake() {
	if p := w.ch.Swap(nil); p != nil {
		close(*p)
	}
}

// The backoff of leaderCall between attempts: doubling from the first to
// past the cap. A leader change ends one early (leaderWake).
const (
	leaderBackoffFirst = 2 * time.Millisecond
	leaderBackoffCap   = 100 * time.Millisecond
)
