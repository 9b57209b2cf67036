package raftstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/raftstore/transport"
	"github.com/idemgate/idemgate/storeapi"
)

// The clock guard. Every command carries its leader's wall clock, and the
// state machine's clock is the largest stamp it has applied: a leader whose
// clock jumped ten years ahead would expire every record and token at once
// and pin the state machine's clock in the future for ever. So a leader
// compares its clock with the state machine's before it stamps: within
// Config.MaxClockJump it proposes at once (one atomic load); beyond it, it
// asks the other voters for their clocks. If a quorum's clocks agree with its
// own (the whole cluster was down for a while) it goes on; otherwise its
// clock is the odd one out: it refuses to propose (storeapi.ErrClockJump, a 503),
// logs it, and hands leadership to another node.
//
// While the cluster runs, the leader proposes an empty command whenever
// nothing was stamped for clockTickEvery, so the state machine's clock never
// lags real time by more than that, and only a real jump trips the guard.

const clockTickEvery = 30 * time.Second

type clockGuard struct {
	s         *Store
	mu        sync.Mutex
	checkedAt int64 // the state machine's clock when a quorum last confirmed a jump
	refusedAt time.Time
}

// check decides whether this leader may stamp stamp.
func (g *clockGuard) check(ctx context.Context, stamp int64) error {
	base := g.s.fsm.Now()
	if base == 0 || stamp-base <= int64(g.s.cfg.MaxClockJump) {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.checkedAt == base {
		return nil // a quorum agreed with this clock since the last applied stamp
	}
	if time.Since(g.refusedAt) < time.Second {
		return fmt.Errorf("%w: %s ahead of the cluster", storeapi.ErrClockJump, time.Duration(stamp-base).Round(time.Second))
	}
	agree, asked := g.askPeers(ctx, stamp)
	if 2*(agree+1) > asked+1 { // this node and the agreeing peers are a majority of the voters
		g.checkedAt = base
		g.s.logger.Warn("clock guard: the cluster's clock moved on while no command was applied; a quorum agrees",
			"ahead_of_state_machine", time.Duration(stamp-base).Round(time.Second), "agreeing_peers", agree)
		return nil
	}
	g.refusedAt = time.Now()
	g.s.logger.Error("clock guard: this node's clock is far ahead of the cluster's; refusing to propose and stepping down",
		"ahead_of_state_machine", time.Duration(stamp-base).Round(time.Second), "agreeing_peers", agree, "voters", asked+1)
	go g.s.raft.LeadershipTransfer()
	return fmt.Errorf("%w: %s ahead of the cluster", storeapi.ErrClockJump, time.Duration(stamp-base).Round(time.Second))
}

// askPeers asks every other voter for its clock and counts those within
// MaxClockJump of stamp.
func (g *clockGuard) askPeers(ctx context.Context, stamp int64) (agree, asked int) {
	f := g.s.raft.GetConfiguration()
	if err := g.s.waitFuture(ctx, f); err != nil {
		return 0, 0
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	type answer struct{ ok bool }
	answers := make(chan answer)
	for _, srv := range f.Configuration().Servers {
		if srv.Suffrage != raft.Voter || string(srv.ID) == g.s.cfg.NodeID {
			continue
		}
		asked++
		go func(id, addr string) {
			raw, err := g.s.forward(ctx, id, addr, transport.Clock, nil)
			ok := false
			if err == nil && len(raw) == 8 {
				d := stamp - int64(binary.BigEndian.Uint64(raw))
				ok = d <= int64(g.s.cfg.MaxClockJump) && -d <= int64(g.s.cfg.MaxClockJump)
			}
			answers <- answer{ok}
		}(string(srv.ID), string(srv.Address))
	}
	for i := 0; i < asked; i++ {
		if (<-answers).ok {
			agree++
		}
	}
	return agree, asked
}

// tick keeps the state machine's clock close to real time while the cluster
// is idle (see above).
func (s *Store) tick(ctx context.Context) {
	t := time.NewTicker(clockTickEvery / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.IsLeader() || s.stampNow()-s.fsm.Now() < int64(clockTickEvery) {
			continue
		}
		c, cancel := context.WithTimeout(ctx, s.cfg.ApplyTimeout)
		s.Apply(c, command.NoopCommand(nil))
		cancel()
	}
}

// stampNow is this node's wall clock for stamps (Config.Clock, and the chaos
// build's skew).
func (s *Store) stampNow() int64 {
	now := time.Now
	if s.cfg.Clock != nil {
		now = s.cfg.Clock
	}
	return now().UnixNano() + chaosSkew()
}
