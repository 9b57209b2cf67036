package raftstore

import (
	"context"
	"time"

	"github.com/idemgate/idemgate/fsm"
)

// KVSet is Commands.KVSet with one shortcut. A SETNX on a key that is live
// changes nothing: it is a read, and under contention (many clients racing
// for one lock) nearly every SETNX is one. So a SETNX that finds the key
// live in this node's state confirms it with a linearizable read (a read
// index: a heartbeat round, no log entry, no fsync) and answers "exists"
// from that read. A SETNX that finds the key absent locally, the common case
// of a fresh idempotency key, is proposed at once, as before: the state
// machine decides. "Live" is judged on the later of this node's clock and
// the state machine's, so a key is never reported live past the expiry the
// cluster's clock has reached.
//
// Not for a caller that carries a request id (an API retry under an
// Idempotency-Key): its answer must be the first attempt's, which only the
// state machine's memory of the id gives.
func (s *Store) KVSet(ctx context.Context, key, value []byte, ttl time.Duration, mode fsm.SetMode, version uint64) (*fsm.Result, error) {
	if mode == fsm.SetNX {
		if _, retry := RequestIDFrom(ctx); !retry {
			if _, err := s.fsm.KV(key, time.Now()); err == nil { // live here: confirm it is still
				if e, err := s.KV(ctx, key, false); err == nil {
					return &fsm.Result{Code: fsm.CodeExists, Version: e.Version, ExpiresAt: e.ExpiresAt, Value: e.Value}, nil
				}
			}
		}
	}
	return s.Commands.KVSet(ctx, key, value, ttl, mode, version)
}
