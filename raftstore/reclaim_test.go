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
	leader := c.WaitLeader(5 * time.Second)
	var pairs [][]byte
	for i := range 20000 {
		pairs = append(pairs, fmt.Appendf(nil, "f%d", i), []byte("v"))
	}
	for lo := 0; lo < len(pairs); lo += command.MaxCmdElems {
		if _, err := c.Stores[leader].ApplyKV(ctx, command.HashSetCommand([]byte("h"), pairs[lo:min(len(pairs), lo+command.MaxCmdElems)], false)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Stores[(leader+1)%3].ApplyKV(ctx, command.KVDeleteCommand([]byte("h"))); err != nil {
		t.Fatal(err)
	}
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
