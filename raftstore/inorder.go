package raftstore

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/raftstore/transport"
	"github.com/idemgate/idemgate/storeapi"
)

// Applying a client's pipeline in order. A client that pipelines writes
// (a Redis connection sending many commands before reading an answer)
// expects them applied in the order it sent them, and expects them to be
// cheap. Applying them one by one keeps the order but makes each wait for
// the one before; applying them at once from many goroutines lets the
// leader's group commit pack them but lets the scheduler reorder them.
// ApplyInOrder does both: it hands every command to the leader's
// coalescer (or to the one forwarding connection, whose frames the leader
// proposes in the order they arrive) from one goroutine, in order, and
// only then waits. The coalescer's queue and the Raft log are both first in,
// first out, so the commands commit in the order sent, usually many per
// entry. A command whose attempt failed (a leader change, a cut
// connection) is retried with its request id, as Apply retries: the state
// machine applies it once, but after a leader change it may then apply
// after commands that followed it in the pipeline (Redis promises nothing
// of a pipeline cut by a failover either).

// pipeline applies ops in the order given, pipelined to the leader (see
// the top of this file); it returns when every op has its outcome. It is
// the Store's Commands.Pipeline: faces call Commands.ApplyInOrder.
func (s *Store) pipeline(ctx context.Context, ops []*command.Command) []storeapi.OpResult {
	out := make([]storeapi.OpResult, len(ops))
	if len(ops) == 0 {
		return out
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.ApplyTimeout)
		defer cancel()
	}
	cmds := make([]command.Command, len(ops))
	data := make([][]byte, len(ops))
	for i := range ops {
		cmds[i] = *ops[i]
		if cmds[i].ReqID.IsZero() { // a forwarded script's effects carry theirs (resp, script_leader.go)
			cmds[i].ReqID = storeapi.NewRequestID()
		}
		if out[i].Err = storeapi.CheckKeyspaceKey(cmds[i].Key); out[i].Err != nil {
			continue // never sent, nor applied below
		}
		if cmds[i].Validate() == nil { // else never sent: Apply below says why
			data[i] = cmds[i].Encode(make([]byte, 0, 64+len(cmds[i].Key)+len(cmds[i].Value)))
		}
	}
	start := time.Now()
	waits := s.sendInOrder(ctx, data)
	for i, wait := range waits {
		if out[i].Err != nil {
			continue // refused before it was sent
		}
		if wait != nil {
			out[i].Res, out[i].Err = wait(ctx)
			if out[i].Err == nil {
				measureSince(stageApply, start) // else Apply below measures its own
			}
		}
		if wait == nil || out[i].Err != nil {
			// Not sent, or its fate unknown: Apply validates it, and
			// retries it under the same request id; if that gives up, the
			// first attempt's fate is still unknown.
			sent := wait != nil && mayHaveApplied(out[i].Err)
			out[i].Res, out[i].Err = s.Apply(ctx, &cmds[i])
			out[i].Err = giveUp(sent, out[i].Err)
		}
	}
	return out
}

// sendInOrder hands the encoded commands to the leader in order without
// waiting, and returns a wait per command; nil for one it could not hand
// over (the caller applies it the slow way). A follower forwards over its
// one connection to the leader, so one pipeline is one stream of frames.
func (s *Store) sendInOrder(ctx context.Context, data [][]byte) []func(context.Context) (*command.Result, error) {
	waits := make([]func(context.Context) (*command.Result, error), len(data))
	if s.checkDisk() != nil || s.refuseRemoved() {
		return waits
	}
	for i := range data {
		if len(data[i]) > s.cfg.MaxCommandBytes {
			data[i] = nil
		}
	}
	if s.raft.State() == raft.Leader {
		for i, d := range data {
			if d == nil {
				continue
			}
			// proposeLocal stamps in place: the retry gets its own copy.
			if w, _, err := s.proposeLocal(append([]byte(nil), d...)); err == nil {
				waits[i] = w
			}
		}
		return waits
	}
	addr, id := s.raft.LeaderWithID()
	if addr == "" {
		return waits
	}
	for i, d := range data {
		if d == nil {
			continue
		}
		sent := time.Now()
		wait, err := s.forwardSend(ctx, string(id), string(addr), transport.Apply, d)
		if err != nil {
			break
		}
		waits[i] = func(ctx context.Context) (*command.Result, error) {
			p, err := wait(ctx)
			if err != nil {
				return nil, err
			}
			measureSince(stageForward, sent)
			return command.DecodeResult(p)
		}
	}
	return waits
}
