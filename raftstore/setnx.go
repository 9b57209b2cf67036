package raftstore

import (
	"context"

	"github.com/idemgate/idemgate/fsm"
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

// liveSetNX reports whether c is a SETNX whose key this node holds live.
func (s Commands) liveSetNX(ctx context.Context, c *fsm.Command) bool {
	if c.Type != fsm.TypeKVSet || c.Mode != fsm.SetNX || s.Read == nil {
		return false
	}
	_, err := s.Read(ctx, c.Key, true)
	return err == nil
}

// readSetNX answers a SETNX whose key is live here from a linearizable
// read, as the state machine would (its current value, version and
// expiry); false when it must be proposed instead: the key is not live
// here, or the read did not confirm it.
func (s Commands) readSetNX(ctx context.Context, c *fsm.Command) (*fsm.Result, bool) {
	if !s.liveSetNX(ctx, c) {
		return nil, false
	}
	e, err := s.Read(ctx, c.Key, false)
	if err != nil {
		return nil, false
	}
	r := &fsm.Result{Code: fsm.CodeExists, Version: e.Version, ExpiresAt: e.ExpiresAt}
	if e.Kind == fsm.KindString { // a list's encoding is no value to answer (as the state machine answers)
		r.Value = e.Value
	}
	return r, true
}
