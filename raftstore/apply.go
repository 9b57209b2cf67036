package raftstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/raftstore/transport"
	"github.com/idemgate/idemgate/storeapi"
)

// errRetry marks an attempt whose outcome is unknown or that reached a node
// that just lost leadership: the same request (same request id) is retried.
var errRetry = errors.New("retry")

// errNotSent marks a retry whose attempt never left this node (the
// leader could not be dialled): its fate is known, nothing was done.
var errNotSent = errors.New("not sent")

// mapRaftErr turns hashicorp/raft's errors into the store's.
func mapRaftErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader):
		return storeapi.ErrNotLeader
	case errors.Is(err, raft.ErrRaftShutdown):
		return storeapi.ErrShutdown
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrLeadershipTransferInProgress),
		errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrAbortedByRestore):
		return fmt.Errorf("%w: %v", errRetry, err)
	}
	return err
}

// proposeLocal stamps data with this leader's clock and hands it to Raft
// (through the coalescer, which may pack it with others into one entry).
// The returned function waits for the command to be applied here, for ctx,
// or for the store to close; the channel is closed once its result is in.
func (s *Store) proposeLocal(data []byte) (func(context.Context) (*command.Result, error), <-chan struct{}, error) {
	if s.raft.State() != raft.Leader {
		return nil, nil, storeapi.ErrNotLeader
	}
	if len(data) > s.cfg.MaxCommandBytes { // a forwarded command is checked here, a local one in Apply too
		return nil, nil, fmt.Errorf("%w: %d bytes, the limit is %d", storeapi.ErrTooLarge, len(data), s.cfg.MaxCommandBytes)
	}
	if err := s.checkDisk(); err != nil {
		if t, derr := command.PeekType(data); derr != nil || !diskExempt(t) {
			return nil, nil, err
		}
	}
	stamp := s.stampNow()
	if err := s.clock.check(context.Background(), stamp); err != nil {
		return nil, nil, err
	}
	if err := command.Stamp(data, stamp); err != nil {
		return nil, nil, err
	}
	return s.coal.enqueue(data)
}

// diskExempt reports whether a command of type t is proposed while the disk
// guard refuses writes, as the command table says (sweeps free space; the
// cluster's own facts are a few bytes, once, and membership safety needs
// them).
func diskExempt(t command.Type) bool { return t.AllowedWhenDiskLow() }

// Apply proposes c (through the leader, wherever it is) and returns its
// result once applied. A command without a request id gets the one ctx
// carries (storeapi.WithRequestID), or a fresh one; every retry
// after a cut connection or a leadership change carries the same id, so the
// state machine applies it once. A nil error means the command was applied;
// the Result says how it went (Result.Err).
func (s *Store) Apply(ctx context.Context, c *command.Command) (*command.Result, error) {
	if s.refuseRemoved() {
		return nil, storeapi.ErrRemoved
	}
	if err := s.checkDisk(); err != nil && !diskExempt(c.Type) {
		return nil, err
	}
	if c.ReqID.IsZero() && c.Type != command.TypeNoop {
		c.ReqID = storeapi.RequestID(ctx)
	}
	if err := c.Validate(); err != nil {
		return nil, err // never proposed: bad input costs no round trip
	}
	data := c.Encode(make([]byte, 0, 64+len(c.Key)+len(c.Value)+len(c.Body)))
	if len(data) > s.cfg.MaxCommandBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", storeapi.ErrTooLarge, len(data), s.cfg.MaxCommandBytes)
	}
	first := true
	defer measureSince(stageApply, time.Now())
	return leaderCall(s, ctx, transport.Apply,
		func() []byte {
			if first {
				first = false
				return data
			}
			if mutantNewRequestIDOnRetry {
				c.ReqID = storeapi.NewRequestID()
				return c.Encode(nil)
			}
			// A retry may race the first attempt still in flight
			// inside Raft: never re-stamp bytes it may hold.
			return append([]byte(nil), data...)
		},
		func(payload []byte) (res *command.Result, err error) {
			_, span := startSpan(ctx, "raft.commit", trace.SpanKindInternal)
			defer func() { endSpan(span, err) }()
			wait, _, err := s.proposeLocal(payload)
			if err != nil {
				return nil, err
			}
			return wait(ctx)
		},
		command.DecodeResult)
}

// leaderCall runs one request on the leader: locally when this node leads,
// forwarded otherwise, retried across leader changes until ctx (or the
// configured ApplyTimeout) ends. When this node has known no leader for an
// election timeout it answers storeapi.ErrNoLeader at once, as etcd does: an
// election under way ends well within one, and a cluster without a quorum
// would only make the caller wait for its deadline to say the same.
func leaderCall[T any](s *Store, ctx context.Context, kind transport.Kind, payload func() []byte,
	local func([]byte) (T, error), decode func([]byte) (T, error)) (T, error) {
	var zero T
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.ApplyTimeout)
		defer cancel()
	}
	backoff := time.Duration(s.firstBackoff.Load())
	if backoff == 0 {
		backoff = leaderBackoffFirst
	}
	sawLeader := false
	// sent: an attempt may have reached the log (its fate is unknown). A
	// call that then gives up must say so, not storeapi.ErrNoLeader
	// ("nothing was done"): a client that retries a CLUSTERDOWN could apply
	// it twice.
	sent := false
	var leaderless time.Time // when this call found no leader; zero while it finds one
	for {
		var (
			out T
			err error
		)
		select {
		case <-s.closing:
			return zero, giveUp(sent, storeapi.ErrShutdown)
		default:
		}
		woken := s.leaderWake.wait() // before the look at the leader
		if s.raft.State() == raft.Leader {
			sawLeader, leaderless = true, time.Time{}
			out, err = local(payload())
		} else if addr, id := s.raft.LeaderWithID(); addr != "" {
			sawLeader, leaderless = true, time.Time{}
			var raw []byte
			forwardStart := time.Now()
			fctx, span := forwardSpan(ctx, string(id))
			raw, err = s.forward(fctx, string(id), string(addr), kind, payload())
			endSpan(span, err)
			if kind == transport.Apply {
				measureSince(stageForward, forwardStart)
			}
			if err == nil {
				out, err = decode(raw)
			}
		} else {
			now := time.Now()
			if leaderless.IsZero() {
				leaderless = now
			}
			if now.Sub(s.leaderlessSince(leaderless)) >= s.cfg.ElectionTimeout {
				return zero, giveUp(sent, storeapi.ErrNoLeader)
			}
			err = storeapi.ErrNoLeader
		}
		if err == nil {
			return out, nil
		}
		sent = sent || mayHaveApplied(err)
		retry := errors.Is(err, errRetry) || errors.Is(err, storeapi.ErrNotLeader) || errors.Is(err, storeapi.ErrNoLeader) || errors.Is(err, storeapi.ErrShutdown)
		if !retry && ctx.Err() == nil {
			return zero, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-s.closing:
			t.Stop()
			return zero, giveUp(sent, storeapi.ErrShutdown)
		case <-ctx.Done():
			t.Stop()
			if !sawLeader {
				return zero, storeapi.ErrNoLeader
			}
			return zero, fmt.Errorf("%w: %v", storeapi.ErrTimeout, err)
		case <-woken: // the leader changed: try it now
			t.Stop()
		case <-t.C:
		}
		if backoff < leaderBackoffCap {
			backoff *= 2
		}
	}
}

// mayHaveApplied reports whether an attempt that failed with err may
// still be applied: it may have reached a leader's log, unless it was
// refused before (a node that does not lead, none known, never sent). A
// refusal of the command itself (too large, disk full) is answered as it
// is, whatever this says.
func mayHaveApplied(err error) bool {
	return err != nil && !errors.Is(err, storeapi.ErrNotLeader) && !errors.Is(err, storeapi.ErrNoLeader) && !errors.Is(err, errNotSent)
}

// giveUp is the error of a call that stops with err. When an earlier
// attempt may have been applied (sent), an answer saying nothing was done
// (no leader, shutting down) would be false: a client retrying it, as
// Redis clients retry CLUSTERDOWN, could apply the command twice. It is
// storeapi.ErrTimeout then, whose answers say the command may or may not
// have been applied.
func giveUp(sent bool, err error) error {
	if sent && (errors.Is(err, storeapi.ErrNoLeader) || errors.Is(err, storeapi.ErrShutdown) || errors.Is(err, storeapi.ErrNotLeader)) {
		return fmt.Errorf("%w: an earlier attempt may have been applied; then: %v", storeapi.ErrTimeout, err)
	}
	return err
}

// waitFuture waits for a Raft future, for ctx, or for the store to close.
// hashicorp/raft answers no future that was still queued (applyCh is
// buffered with BatchApplyCh, and committed entries wait for the FSM) when
// it shuts down, and an apply future has no shutdown channel: waiting on
// Error() alone can hang forever. A timed-out or cut-off wait leaves the
// command's fate unknown; the caller retries with the same request id.
func (s *Store) waitFuture(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return mapRaftErr(err)
	case <-s.closing:
		return storeapi.ErrShutdown
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", storeapi.ErrTimeout, ctx.Err())
	}
}

func decodeIndex(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("raftstore: bad read index answer (%d bytes)", len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}
