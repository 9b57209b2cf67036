package raftstore

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// skewedCluster starts 3 nodes whose clocks are time.Now plus a per-node
// offset the test moves.
func skewedCluster(t *testing.T) (*TestCluster, []*atomic.Int64) {
	skews := []*atomic.Int64{{}, {}, {}}
	i := 0
	c := StartTestCluster(t, 3, func(cfg *Config) {
		skew := skews[i]
		i++
		cfg.Clock = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	return c, skews
}

// TestClockGuardRefusesAJumpedLeader: the leader's clock jumps ten years
// ahead. It refuses to stamp with it and hands leadership on; nothing
// expires, and the state machine's clock stays in the present.
func TestClockGuardRefusesAJumpedLeader(t *testing.T) {
	c, skews := skewedCluster(t)
	ctx := context.Background()
	leader := c.WaitLeader(10 * time.Second)
	if _, err := c.Store(leader).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("lock"), Value: []byte("held"), TTL: time.Hour, Mode: command.SetNX})); err != nil {
		t.Fatal(err)
	}
	skews[leader].Store(int64(10 * 365 * 24 * time.Hour))
	_, err := c.Store(leader).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("other"), Value: []byte("x")}))
	if err == nil {
		// Leadership may have moved on before the write reached the guard:
		// then the write was stamped by a sane leader.
		if c.Store(leader).IsLeader() {
			t.Fatal("a leader with a clock ten years ahead stamped a write")
		}
	} else if !errors.Is(err, storeapi.ErrClockJump) || !storeapi.Unavailable(err) {
		t.Fatalf("write on the jumped leader = %v, want ErrClockJump (a 503)", err)
	}
	// Leadership moves to a node with a sane clock, and writes go on.
	var next int
	deadline := time.Now().Add(15 * time.Second)
	for {
		next = c.WaitLeader(10 * time.Second)
		if next != leader {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the jumped leader kept leadership")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := c.Store(next).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("after"), Value: []byte("y")})); err != nil {
		t.Fatalf("write on the new leader: %v", err)
	}
	for i := 0; i < 3; i++ {
		s := c.Store(i)
		if now := time.Unix(0, s.FSM().Now()); now.After(time.Now().Add(time.Hour)) {
			t.Errorf("node %d's state machine clock is %v: the jump got in", i, now)
		}
		if e, err := s.FSM().KV([]byte("lock"), time.Now()); err != nil || string(e.Value) != "held" {
			t.Errorf("node %d: the lock expired: %v", i, err)
		}
	}
}

// TestClockGuardAcceptsWhatAQuorumAgrees: every clock moves two hours on at
// once (the cluster was down, or idle without ticks): the leader asks, a
// quorum agrees, and writes go on.
func TestClockGuardAcceptsWhatAQuorumAgrees(t *testing.T) {
	c, skews := skewedCluster(t)
	ctx := context.Background()
	leader := c.WaitLeader(10 * time.Second)
	if _, err := c.Store(leader).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("a"), Value: []byte("1")})); err != nil {
		t.Fatal(err)
	}
	for _, s := range skews {
		s.Store(int64(2 * time.Hour))
	}
	leader = c.WaitLeader(10 * time.Second)
	if _, err := c.Store(leader).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("b"), Value: []byte("2")})); err != nil {
		t.Fatalf("a write after the whole cluster's clock moved on: %v", err)
	}
	if now := time.Unix(0, c.Store(leader).FSM().Now()); now.Before(time.Now().Add(time.Hour)) {
		t.Fatalf("state machine clock %v did not follow the cluster's", now)
	}
}
