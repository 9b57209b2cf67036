package raftstore

import (
	"context"
	"time"

	"github.com/hashicorp/raft"
	"github.com/idemgate/idemgate/command"
)

// The SETNX shortcut, taken by every face's SETNX (Commands.ApplyKV and
// Commands.ApplyInOrder: the API's PUT ?nx=1, Redis's SET NX and SETNX). A
// SETNX on a key that is live changes nothing: it is a read, and under
// contention (many clients racing for one lock) nearly every SETNX is one.
// So a SETNX that finds the key live in this node's state confirms it with
// a linearizable read (a read index: a heartbeat round, no log entry, no
// fsync) and answers "exists" from that read. A SETNX that finds the key
// absent locally, the common case of a fresh idempotency key, is proposed
// at once: the state machine decides. "Live" is judged on the later of this
// node's clock and the state machine's, so a key is never reported live
// past the expiry the cluster's clock has reached.
//
// A follower's state lags the leader's by a batch: a key it holds live
// may already be gone, the client's own lock released through this node a
// moment ago (its DEL is applied here only once the leader's next batch
// tells this node it committed). So a follower asks the leader's state
// first (Store.LeaderKV, one round trip, answered at once): a key absent
// there is proposed at once, without the read index and the wait to
// apply it; a key live there is confirmed by the linearizable read as
// before. Either way a SETNX answered "exists" was confirmed by a
// linearizable read, and one proposed is decided by the state machine.

// liveSetNX reports whether c is a SETNX whose key this node holds live.
func (s Commands) liveSetNX(ctx context.Context, c *command.Command) bool {
	if c.Type != command.TypeKVSet || c.Mode != command.SetNX || s.Read == nil {
		return false
	}
	_, err := s.Read(ctx, c.Key, true)
	return err == nil
}

// readSetNX answers a SETNX whose key is live here from a linearizable
// read, as the state machine would (its current value, version and
// expiry); false when it must be proposed instead: the key is not live
// here, or the read did not confirm it.
func (s Commands) readSetNX(ctx context.Context, c *command.Command) (*command.Result, bool) {
	if !s.liveSetNX(ctx, c) || (s.GoneOnLeader != nil && s.GoneOnLeader(ctx, c.Key)) {
		return nil, false
	}
	e, err := s.Read(ctx, c.Key, false)
	if err != nil {
		return nil, false
	}
	r := &command.Result{Code: command.CodeExists, Version: e.Version, ExpiresAt: e.ExpiresAt}
	if e.Kind == command.KindString { // a list's encoding is no value to answer (as the state machine answers)
		r.Value = e.Value
	}
	return r, true
}

// goneOnLeader is Commands.GoneOnLeader: false on the leader (its state
// is the one asked), and when the leader cannot be asked (the read index
// then decides).
func (s *Store) goneOnLeader(ctx context.Context, key []byte) bool {
	if s.raft.State() == raft.Leader {
		return false
	}
	_, live, err := s.LeaderKV(ctx, key, time.Now())
	return err == nil && !live
}
