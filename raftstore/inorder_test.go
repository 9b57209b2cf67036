package raftstore

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// TestApplyInOrderKeepsTheOrder: a pipeline of dependent writes, from the
// leader and from a follower, applies in the order given: each SET XX GET
// sees the value the op before it wrote, and each INCR the count before it.
// Their revisions increase in pipeline order. A bad op gets its own error
// and the others still apply.
func TestApplyInOrderKeepsTheOrder(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	for _, node := range []int{leader, (leader + 1) % 3} {
		s := c.Stores[node]
		key, ctr := []byte(fmt.Sprint("chain", node)), []byte(fmt.Sprint("ctr", node))
		ops := []*command.Command{command.KVSetCommand(command.KVSetRequest{Key: key, Value: []byte("0")})}
		for i := 1; i <= 200; i++ {
			ops = append(ops, command.KVSetCommand(command.KVSetRequest{Key: key, Value: []byte(strconv.Itoa(i)), Mode: command.SetXX, ReturnOld: true}),
				command.KVIncrCommand(ctr, 1))
		}
		ops = append(ops, command.KVIncrCommand(nil, 1), command.KVDeleteCommand(key))
		out := s.ApplyInOrder(ctx, ops)
		var lastRev uint64
		for i, r := range out[:len(out)-2] {
			if r.Err != nil {
				t.Fatalf("node %d op %d: %v", node, i, r.Err)
			}
			if r.Res.Version <= lastRev {
				t.Fatalf("node %d op %d: revision %d after %d: applied out of order", node, i, r.Res.Version, lastRev)
			}
			lastRev = r.Res.Version
			if i == 0 {
				continue
			}
			want := strconv.Itoa((i - 1) / 2)
			if i%2 == 0 {
				want = strconv.Itoa(i / 2) // the INCR's count
			}
			if string(r.Res.Value) != want {
				t.Fatalf("node %d op %d: value %q, want %q", node, i, r.Res.Value, want)
			}
		}
		if err := out[len(out)-2].Err; !errors.Is(err, command.ErrBadCommand) {
			t.Fatalf("node %d: an op without a key: %v, want ErrBadCommand", node, err)
		}
		if r := out[len(out)-1]; r.Err != nil || r.Res.Code != command.CodeOK {
			t.Fatalf("node %d: the delete after the bad op: %+v", node, r)
		}
	}
}
