package raftstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// TestLeaderWriteFailureAnswersTruthfully: when the leader's own log write
// fails after its batch was sent, the followers may still commit it
// (both have it durably, a majority, and one of them is elected), so the
// answer must not say it failed. On a real 3-node cluster the
// leader's write of a command fails once; the followers' writes succeed.
// Whatever hashicorp/raft does, the answer must match the outcome: Created
// means the key is there with its value; an error other than "may or may
// not have been applied" (storeapi.ErrTimeout) means it is not. With
// third_party/raft the leader answers raft.ErrLeadershipLost (unknown
// outcome, as for any entry in flight at a step-down), the store retries
// with the same request id on the new leader, and the state machine's
// memory of that id answers Created, applied once. Answering the write's
// own error, as stock raft does (truthfully there: it sent nothing), would
// answer an error for a key that exists.
func TestLeaderWriteFailureAnswersTruthfully(t *testing.T) {
	key := []byte("leaderwrite-fail-key")
	h := newKeyHold([][]byte{key})
	c := StartTestCluster(t, 3, func(cfg *Config) {
		node := cfg.NodeID
		cfg.wrapLogStore = func(s raft.LogStore) raft.LogStore { return &keyHeldLogStore{LogStore: s, node: node, h: h} }
	})
	leader := c.WaitLeader(5 * time.Second)
	leaderID := c.Cfgs[leader].NodeID
	h.failNext(leaderID, 1)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Sent through a follower, which forwards it to the leader and, told
	// the outcome is unknown, retries it on whichever node leads next.
	res, applyErr := c.Stores[(leader+1)%3].ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: key, Value: []byte("v"), Mode: command.SetNX}))
	h.mu.Lock()
	failed := h.fail[leaderID] == 0
	h.mu.Unlock()
	if !failed {
		t.Fatalf("the leader's write never failed (answer %v, %v)", res, applyErr)
	}

	// The outcome, read linearizably on another node (once a leader of
	// the new term has committed, an entry a majority had is in).
	reader := c.Stores[(leader+2)%3]
	var e command.KVEntry
	var readErr error
	deadline := time.Now().Add(20 * time.Second)
	for {
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		e, readErr = reader.KV(rctx, key, false)
		rcancel()
		if readErr == nil || errors.Is(readErr, command.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no linearizable read after the leader's failed write: %v", readErr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	switch {
	case applyErr == nil && res.Code == command.CodeCreated:
		if readErr != nil || string(e.Value) != "v" {
			t.Fatalf("answered Created, but the key reads %q, %v", e.Value, readErr)
		}
	case applyErr == nil:
		t.Fatalf("answered %v, want Created or an error", res.Code)
	case errors.Is(applyErr, storeapi.ErrTimeout):
		// "may or may not have been applied": true either way.
	default:
		if readErr == nil {
			t.Fatalf("answered %v, but the command was done: the key reads %q (version %d)", applyErr, e.Value, e.Version)
		}
	}
	t.Logf("answer %v %v; key %q %v", res, applyErr, e.Value, readErr)
}
