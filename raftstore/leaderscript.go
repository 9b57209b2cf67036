package raftstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/raftstore/transport"
	"github.com/idemgate/idemgate/storeapi"
)

// Scripts a follower's client sent, run on the leader. A script runs on
// the node its client reached and its effects are checked in the log
// against the versions it read (fsm.Sandbox); the scripts of one node on
// the same keys take turns there, but those of different nodes race, and
// the follower's, whose reads and entry are a round trip further from the
// log, lose. So the Redis listener of a follower may hand a writing
// script to the leader's listener: the request and its answer are the
// listener's bytes, carried here as a forwarded request of their own
// kind (transport.LeaderScript), and this package never reads them.

// scriptRunner runs one forwarded script on this node, the leader, as the
// Redis listener's own client's script would run, and returns the reply
// it wrote: at most maxReply bytes (what a forwarding frame carries back).
// attempt counts the follower's sends of req (1 the first): a later one
// may follow an attempt whose fate the follower never learnt. An error is
// a request it could not read; the script did not run.
type scriptRunner func(req []byte, attempt, maxReply int) ([]byte, error)

// OnLeaderScript registers what runs the scripts followers forward to
// this node while it leads (resp.LeaderScripts).
func (s *Store) OnLeaderScript(fn func(req []byte, attempt, maxReply int) ([]byte, error)) {
	r := scriptRunner(fn)
	s.scriptRunner.Store(&r)
}

// errNoScriptRunner: a node whose listener registered no scriptRunner
// (its Redis face is off); nothing ran, and the follower runs the script
// itself.
var errNoScriptRunner = errors.New("this node runs no forwarded scripts")

// LeaderScript sends req, a script a client of this node sent, to the
// leader's listener (OnLeaderScript) and returns the reply it wrote. It
// is sent again, each time with its attempt's number, to whichever node
// leads, when a leader answered it no longer leads, a dial failed, or the
// connection was lost with the answer (its fate unknown: the listener
// settles that, RequestApplied); it gives up with storeapi.ErrTimeout
// (may or may not have been applied) when ctx ends.
// Nil and no error: nothing ran (the leader's hello does not name
// transport.FeatureLeaderScript, its Redis face is off, or req is over a
// forwarding frame): the caller runs the script itself.
func (s *Store) LeaderScript(ctx context.Context, req []byte) ([]byte, error) {
	if len(req) > int(s.maxFrame())-transport.FrameOverhead/2 {
		return nil, nil
	}
	if s.refuseRemoved() {
		return nil, storeapi.ErrRemoved
	}
	attempt := 0
	out, err := leaderCall(s, ctx, transport.LeaderScript,
		func() []byte {
			attempt = min(attempt+1, maxScriptAttempts)
			return append([]byte{byte(attempt)}, req...)
		},
		func(p []byte) ([]byte, error) { return s.runLeaderScript(p) },
		func(b []byte) ([]byte, error) { return b, nil })
	if errors.Is(err, errLeaderRunsNoScripts) || errors.Is(err, errNoScriptRunner) {
		return nil, nil // nothing ran
	}
	return out, err
}

// maxScriptAttempts bounds the number a forwarded script's attempt
// carries (one byte); later attempts carry it too, and are settled as it.
const maxScriptAttempts = 255

// RequestApplied reports whether a command of one of ids was applied with
// an OK result, as this node's state holds it after a barrier: on the
// leader, what any earlier leader committed is applied by then, and what
// it did not commit never will be.
func (s *Store) RequestApplied(ctx context.Context, ids []command.ReqID) (bool, error) {
	if err := s.Barrier(ctx); err != nil {
		return false, err
	}
	for _, id := range ids {
		r, ok, err := s.fsm.LookupRequest(id)
		if err != nil {
			return false, err
		}
		if ok && r.Code == command.CodeOK {
			return true, nil
		}
	}
	return false, nil
}

// errLeaderRunsNoScripts: the leader's hello named no
// transport.FeatureLeaderScript; the request was not sent.
var errLeaderRunsNoScripts = errors.New("the leader runs no forwarded scripts")

// runLeaderScript runs a forwarded script here, the leader;
// storeapi.ErrNotLeader elsewhere, so that the follower sends it on to the
// leader, nothing having run.
func (s *Store) runLeaderScript(req []byte) ([]byte, error) {
	if s.raft.State() != raft.Leader {
		return nil, storeapi.ErrNotLeader
	}
	fn := s.scriptRunner.Load()
	if fn == nil {
		return nil, errNoScriptRunner
	}
	if len(req) < 1 || req[0] == 0 {
		return nil, fmt.Errorf("%w: a forwarded script without its attempt", command.ErrBadCommand)
	}
	return (*fn)(req[1:], int(req[0]), int(s.maxFrame())-transport.FrameOverhead/2)
}

// sendLeaderScript is forwardSend's check for a LeaderScript request: the
// leader's connection must have said it takes them.
func sendLeaderScript(c *transport.Client, kind transport.Kind) error {
	if kind == transport.LeaderScript && !c.RunsScripts() {
		return fmt.Errorf("%w: %w", errNotSent, errLeaderRunsNoScripts)
	}
	return nil
}
