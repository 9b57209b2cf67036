package raftstore

import (
	"context"
	"time"

	"github.com/idemgate/idemgate/command"
)

// reclaim proposes reclaiming commands while the state machine's
// graveyard holds the elements of dropped collections (package fsm's
// grave.go: a DEL of a million members leaves the keyspace in one entry
// and its elements later, a bounded step per reclaiming entry). Only the
// leader proposes, one command at a time, resting as long as each took:
// client commands keep about half of the log while a large drop is
// reclaimed, and no entry waits behind more than one step.
func (s *Store) reclaim(ctx context.Context) {
	t := time.NewTicker(reclaimPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i := 0; i < maxReclaimRun && s.IsLeader() && s.fsm.Graves() > 0; i++ {
			start := time.Now()
			c, cancel := context.WithTimeout(ctx, s.cfg.ApplyTimeout)
			_, err := s.Apply(c, command.NoopCommand(nil))
			cancel()
			if err != nil {
				break // not the leader now, or a failure: the next poll sees
			}
			rest(ctx, time.Since(start))
		}
	}
}

// reclaimPoll is how often the leader looks at the graveyard; maxReclaimRun
// bounds the steps of one look (a million sorted set members are about
// 500 steps).
const (
	reclaimPoll   = 200 * time.Millisecond
	maxReclaimRun = 1 << 14
)

// rest waits d or until ctx ends.
func rest(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
