package raftstore

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/idemgate/idemgate/command"
)

// TestLeaderWake: a wait's channel is closed by the next wake, every
// waiter's at once; the next wait gets a fresh one; a wake with no waiter
// wakes nothing later.
func TestLeaderWake(t *testing.T) {
	t.Parallel()
	var w leaderWake
	w.wake() // no waiter: nothing to close
	a := w.wait()
	if b := w.wait(); b != a {
		t.Fatal("two waits before a wake got different channels")
	}
	select {
	case <-a:
		t.Fatal("closed before a wake")
	default:
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() { defer wg.Done(); <-w.wait() }()
	}
	time.Sleep(10 * time.Millisecond) // let some of them take the channel; the rest take a fresh one
	w.wake()
	<-a
	w.wake() // for the late ones, if any took a channel after the first wake
	wg.Wait()
	c := w.wait()
	select {
	case <-c:
		t.Fatal("the wait after the wakes got a closed channel")
	default:
	}
}

// TestCallWokenByLeaderChange: a write on a follower whose leader was
// stopped retries when the follower learns of the new leader, not when
// its backoff ends: with the first backoff an hour long, it is still
// answered, within its 30 s context, by the new leader.
func TestCallWokenByLeaderChange(t *testing.T) {
	t.Parallel()
	c := StartTestCluster(t, 3, nil)
	leader := c.WaitLeader(10 * time.Second)
	f := c.Stores[(leader+1)%3]
	f.firstBackoff.Store(int64(time.Hour))
	oldAddr, _ := f.raft.LeaderWithID()
	c.Stop(leader)
	if addr, _ := f.raft.LeaderWithID(); addr != oldAddr {
		t.Logf("the follower already moved from %s to %q", oldAddr, addr) // its first attempt then waits for one, woken as well
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := f.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("after-failover"), Value: []byte("v"), Mode: command.SetNX}))
	if err != nil || res.Code != command.CodeCreated {
		t.Fatalf("the write on the follower: %+v, %v; want it applied by the new leader", res, err)
	}
	if f.raft.State() != raft.Leader {
		if addr, _ := f.raft.LeaderWithID(); addr == oldAddr || addr == "" {
			t.Fatalf("applied, yet the follower names leader %q (the stopped one was %s)", addr, oldAddr)
		}
	}
}

// TestConfigRefusesRaftTimings: timeouts hashicorp/raft would refuse at
// start (or that would elect without a failure) are refused by Validate,
// naming them.
func TestConfigRefusesRaftTimings(t *testing.T) {
	t.Parallel()
	base := DefaultConfig()
	base.NodeID, base.DataDir, base.RaftBind = "n1", t.TempDir(), "127.0.0.1:0"
	if err := base.Validate(); err != nil {
		t.Fatalf("the default config: %v", err)
	}
	for _, tc := range []struct {
		name          string
		hb, el, lease time.Duration
		want          string
	}{
		{"heartbeat tiny", 5 * time.Millisecond, time.Second, 2 * time.Millisecond, "HeartbeatTimeout 5ms"},
		{"election under heartbeat", time.Second, 500 * time.Millisecond, 500 * time.Millisecond, "the election timeout at least the heartbeat timeout"},
		{"lease over heartbeat", 200 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, "LeaderLeaseTimeout 300ms"},
		{"lease tiny", 200 * time.Millisecond, 200 * time.Millisecond, time.Millisecond, "LeaderLeaseTimeout 1ms"},
	} {
		c := base
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = tc.hb, tc.el, tc.lease
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	c := base
	c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = LANHeartbeatTimeout, LANElectionTimeout, LANHeartbeatTimeout/2
	if err := c.Validate(); err != nil {
		t.Errorf("the LAN profile: %v", err)
	}
}
