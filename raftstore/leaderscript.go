package raftstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

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
// An error is a request it could not read; the script did not run.
type scriptRunner func(req []byte, maxReply int) ([]byte, error)

// OnLeaderScript registers what runs the scripts followers forward to
// this node while it leads (resp.LeaderScripts).
func (s *Store) OnLeaderScript(fn func(req []byte, maxReply int) ([]byte, error)) {
	r := scriptRunner(fn)
	s.scriptRunner.Store(&r)
}

// errNoScriptRunner: a node whose listener registered no scriptRunner
// (its Redis face is off); nothing ran, and the follower runs the script
// itself.
var errNoScriptRunner = errors.New("this node runs no forwarded scripts")

// LeaderScript sends req, a script a client of this node sent, to the
// leader's listener (OnLeaderScript) and returns the reply it wrote. A leader that
// answers it is not the leader any more, or a dial that failed, is tried
// again (nothing ran); once the request may have reached a leader it is
// never sent again: a lost connection or the end of ctx answers
// storeapi.ErrTimeout (the script may or may not have been applied).
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
	out, err := leaderCall(s, ctx, transport.LeaderScript, func() []byte { return req },
		func(p []byte) ([]byte, error) { return s.runLeaderScript(p) },
		func(b []byte) ([]byte, error) { return b, nil })
	if errors.Is(err, errLeaderRunsNoScripts) || errors.Is(err, errNoScriptRunner) {
		return nil, nil // nothing ran
	}
	return out, err
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
	return (*fn)(req, int(s.maxFrame())-transport.FrameOverhead/2)
}

// sendLeaderScript is forwardSend's check for a LeaderScript request: the
// leader's connection must have said it takes them.
func sendLeaderScript(c *transport.Client, kind transport.Kind) error {
	if kind == transport.LeaderScript && !c.RunsScripts() {
		return fmt.Errorf("%w: %w", errNotSent, errLeaderRunsNoScripts)
	}
	return nil
}
