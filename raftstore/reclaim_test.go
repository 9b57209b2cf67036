package raftstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// TestLeaderReclaimsGraves: a DEL of a hash too large for one entry's
// drop budget leaves its elements in the graveyard; the leader proposes
// reclaiming commands until every node's graveyard is empty, and the
// nodes hold the same state.
func TestLeaderReclaimsGraves(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 60*time.Second)
	// Each write is tried again through the leader of the moment: on a
	// loaded machine an election can come between them (CI saw "no raft
	// leader" here). HSET of the same pairs and DEL are safe to repeat.
	apply := func(cmd *command.Command) {
		t.Helper()
		var err error
		for range 5 {
			if _, err = c.Stores[c.WaitLeader(10*time.Second)].ApplyKV(ctx, cmd); err == nil {
				return
			}
			t.Logf("%s: %v; again", cmd.Type, err)
		}
		t.Fatal(err)
	}
	var pairs [][]byte
	for i := range 20000 {
		pairs = append(pairs, fmt.Appendf(nil, "f%d", i), []byte("v"))
	}
	for lo := 0; lo < len(pairs); lo += command.MaxCmdElems {
		apply(command.HashSetCommand([]byte("h"), pairs[lo:min(len(pairs), lo+command.MaxCmdElems)], false))
	}
	apply(command.KVDeleteCommand([]byte("h")))
	leader := c.WaitLeader(10 * time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for c.Stores[leader].FSM().Graves() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	c.WaitConverged(10 * time.Second)
	for _, s := range c.Stores {
		if g := s.FSM().Graves(); g != 0 {
			t.Fatalf("%s: %d graves left", s.NodeID(), g)
		}
	}
}
