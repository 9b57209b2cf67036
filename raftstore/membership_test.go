package raftstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/loopback"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/storeapi"
)

// writeLoad writes unique keys through random members until stop is
// closed, and records every acknowledged write.
type writeLoad struct {
	mu    sync.Mutex
	acked map[string]string
	fails atomic.Int64
	wg    sync.WaitGroup
	stop  chan struct{}
}

func startWrites(c *TestCluster, writers int) *writeLoad {
	w := &writeLoad{acked: map[string]string{}, stop: make(chan struct{})}
	for g := 0; g < writers; g++ {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-w.stop:
					return
				default:
				}
				s := c.Store(rand.IntN(len(c.Cfgs)))
				if s == nil || s.Removed() {
					continue
				}
				k, v := fmt.Sprintf("w%d-%d", g, i), fmt.Sprintf("v%d", i)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, err := s.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(k), Value: []byte(v)}))
				cancel()
				if err != nil {
					w.fails.Add(1)
					continue
				}
				w.mu.Lock()
				w.acked[k] = v
				w.mu.Unlock()
			}
		}()
	}
	return w
}

func (w *writeLoad) finish() map[string]string {
	close(w.stop)
	w.wg.Wait()
	return w.acked
}

// leaderGaps samples, every 5 ms, whether some member is leader, and
// keeps the longest stretch without one.
type leaderGaps struct {
	longest atomic.Int64
	stop    chan struct{}
	done    chan struct{}
}

func watchLeaderGaps(c *TestCluster) *leaderGaps {
	g := &leaderGaps{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(g.done)
		var since time.Time
		for {
			select {
			case <-g.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			has := false
			for _, s := range c.Running() {
				if s != nil && s.IsLeader() && !s.Removed() {
					has = true
				}
			}
			switch {
			case has && !since.IsZero():
				if d := time.Since(since); int64(d) > g.longest.Load() {
					g.longest.Store(int64(d))
				}
				since = time.Time{}
			case !has && since.IsZero():
				since = time.Now()
			}
		}
	}()
	return g
}

func (g *leaderGaps) finish() time.Duration {
	close(g.stop)
	<-g.done
	return time.Duration(g.longest.Load())
}

// memberLeader waits for a member (not a removed node) that leads.
func memberLeader(c *TestCluster, t *testing.T) int {
	t.Helper()
	var idx int
	testsupport.WaitFor(t, "a leader among the members", 10*time.Second, func() bool {
		for i, s := range c.Running() {
			if s != nil && s.IsLeader() && !s.Removed() {
				idx = i
				return true
			}
		}
		return false
	})
	return idx
}

// TestRemoveLeaderThenFollowerReAddBoth is the operator's sequence that
// once stranded a cluster: remove the leader (docs/operations.md's example), remove a
// follower, add both back, with writes running throughout. The leader hands
// leadership on before it is removed, the removed nodes say so and come
// back without a restart, no acknowledged write is lost, and the cluster is
// never without a leader for long.
func TestRemoveLeaderThenFollowerReAddBoth(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 60*time.Second)
	election := c.Cfgs[0].ElectionTimeout
	old := memberLeader(c, t)
	load := startWrites(c, 4)
	gaps := watchLeaderGaps(c)

	asker := c.Store((old + 1) % 3) // a follower: the removal is forwarded
	if err := asker.RemoveServer(ctx, c.Cfgs[old].NodeID, false); err != nil {
		t.Fatalf("remove the leader %s: %v", c.Cfgs[old].NodeID, err)
	}
	removed := c.Store(old)
	testsupport.WaitFor(t, "the old leader to report itself removed", 10*time.Second, removed.Removed)
	if removed.Ready() || removed.IsLeader() {
		t.Fatalf("removed node: ready=%v leader=%v", removed.Ready(), removed.IsLeader())
	}
	if servers, _ := removed.Servers(); len(servers) != 3 || !servers[2].Removed || servers[2].ID != c.Cfgs[old].NodeID {
		t.Fatalf("removed node's servers = %+v, want the two members and itself marked removed", servers)
	}
	leader := memberLeader(c, t)
	if leader == old {
		t.Fatal("the removed node is still leader")
	}
	follower := 3 - leader - old
	if err := c.Store(leader).RemoveServer(ctx, c.Cfgs[follower].NodeID, false); err != nil {
		t.Fatalf("remove follower %s: %v", c.Cfgs[follower].NodeID, err)
	}
	testsupport.WaitFor(t, "the follower to report itself removed", 10*time.Second, c.Store(follower).Removed)
	time.Sleep(500 * time.Millisecond) // writes on the one-node cluster

	// Back, without restarting either.
	for _, i := range []int{old, follower} {
		if err := c.Store(leader).AddVoter(ctx, c.Cfgs[i].NodeID, c.Cfgs[i].RaftBind); err != nil {
			t.Fatalf("re-add %s: %v", c.Cfgs[i].NodeID, err)
		}
		testsupport.WaitFor(t, c.Cfgs[i].NodeID+" to be a member again", 10*time.Second, func() bool { return !c.Store(i).Removed() })
	}
	time.Sleep(500 * time.Millisecond)
	longest := gaps.finish()
	acked := load.finish()
	c.WaitConverged(20 * time.Second)
	for i := range c.Cfgs {
		s := c.Store(i)
		testsupport.WaitFor(t, c.Cfgs[i].NodeID+" ready", 10*time.Second, s.Ready)
		for k, v := range acked {
			e, err := s.KV(ctx, []byte(k), true)
			if err != nil || string(e.Value) != v {
				t.Fatalf("%s lost acknowledged write %s=%s: %q, %v", c.Cfgs[i].NodeID, k, v, e.Value, err)
			}
		}
	}
	if len(acked) < 20 {
		t.Fatalf("only %d writes acknowledged: the load did not run", len(acked))
	}
	t.Logf("%d writes acknowledged (%d failed, not acknowledged), all on every node; longest time without a leader %s (election timeout %s)",
		len(acked), load.fails.Load(), longest, election)
	if longest > 3*election {
		t.Errorf("the cluster had no leader for %s, over 3 election timeouts (%s)", longest, 3*election)
	}
}

// TestRemovalThatWouldLoseQuorumIsRefused: with one voter down, removing a
// live one would leave two voters of which one answers: refused. Removing
// the dead one is allowed, and so is shrinking to one node; removing the
// last voter is refused even when forced.
func TestRemovalThatWouldLoseQuorumIsRefused(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	dead, live := (leader+1)%3, (leader+2)%3
	c.Stop(dead)
	err := c.Store(live).RemoveServer(ctx, c.Cfgs[live].NodeID, false)
	if !errors.Is(err, storeapi.ErrQuorumAtRisk) {
		t.Fatalf("removing a live voter while another is down = %v, want ErrQuorumAtRisk", err)
	}
	t.Logf("refused: %v", err)
	if servers, _ := c.Store(leader).Servers(); len(servers) != 3 {
		t.Fatalf("a refused removal changed the membership: %+v", servers)
	}
	// The dead one may go: the two that remain are both reachable.
	if err := c.Store(live).RemoveServer(ctx, c.Cfgs[dead].NodeID, false); err != nil {
		t.Fatalf("removing the dead voter: %v", err)
	}
	// Removing the live follower leaves the leader alone, a quorum of one.
	if err := c.Store(leader).RemoveServer(ctx, c.Cfgs[live].NodeID, false); err != nil {
		t.Fatalf("removing to a one-node cluster: %v", err)
	}
	if err := c.Store(leader).RemoveServer(ctx, c.Cfgs[leader].NodeID, true); !errors.Is(err, storeapi.ErrMembership) {
		t.Fatalf("removing the last voter = %v, want ErrMembership", err)
	}
	if _, err := c.Store(leader).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("k"), Value: []byte("v")})); err != nil {
		t.Fatalf("the one-node cluster does not write: %v", err)
	}
}

// TestForcedRemoval: force takes a removal past the quorum guard. The new
// configuration then has no reachable quorum (its entry cannot commit) until
// the down voter is back; then the cluster writes again.
func TestForcedRemoval(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	dead, live := (leader+1)%3, (leader+2)%3
	c.Stop(dead)
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	err := c.Store(leader).RemoveServer(fctx, c.Cfgs[live].NodeID, true)
	cancel()
	if errors.Is(err, storeapi.ErrQuorumAtRisk) {
		t.Fatalf("forced removal refused by the guard: %v", err)
	}
	t.Logf("forced removal with a voter down: %v", err)
	c.Start(dead)
	testsupport.WaitFor(t, "a write once the down voter is back", 20*time.Second, func() bool {
		for _, s := range c.Running() {
			w, cancel := context.WithTimeout(ctx, time.Second)
			_, err := s.ApplyKV(w, command.KVSetCommand(command.KVSetRequest{Key: []byte("k"), Value: []byte("v")}))
			cancel()
			if err == nil {
				return true
			}
		}
		return false
	})
}

// TestNonvoterAddAndPromote: a learner receives the log without voting,
// and is promoted once it answers and has caught up.
func TestNonvoterAddAndPromote(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	for i := 0; i < 50; i++ {
		if _, err := c.Store(leader).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte("v")})); err != nil {
			t.Fatal(err)
		}
	}
	addrs, err := loopback.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.JoinConfig("n4", addrs[0])
	n4, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n4.Close() })
	if n4.Removed() {
		t.Fatal("a node waiting to be added reports itself removed")
	}
	asker := c.Store((leader + 1) % 3)
	if err := asker.Promote(ctx, "n4", false); !errors.Is(err, storeapi.ErrUnknownNode) {
		t.Fatalf("promote before add = %v, want ErrUnknownNode", err)
	}
	if err := asker.AddNonvoter(ctx, "n4", addrs[0]); err != nil {
		t.Fatal(err)
	}
	if err := asker.AddNonvoter(ctx, c.Cfgs[leader].NodeID, c.Cfgs[leader].RaftBind); !errors.Is(err, storeapi.ErrMembership) {
		t.Fatalf("making a voter a non-voter = %v, want ErrMembership", err)
	}
	if err := asker.Barrier(ctx); err != nil { // the change is applied here too
		t.Fatal(err)
	}
	servers, _ := asker.Servers()
	voter := map[string]bool{}
	for _, s := range servers {
		voter[s.ID] = s.Voter
	}
	if v, ok := voter["n4"]; !ok || v {
		t.Fatalf("servers after AddNonvoter = %+v, want n4 as a non-voter", servers)
	}
	testsupport.WaitFor(t, "the learner to catch up", 10*time.Second, func() bool {
		_, err := n4.KV(ctx, []byte("k49"), true)
		return err == nil
	})
	testsupport.WaitFor(t, "the promotion", 10*time.Second, func() bool {
		err := asker.Promote(ctx, "n4", false)
		if err != nil && !errors.Is(err, storeapi.ErrNotCaughtUp) {
			t.Fatal(err)
		}
		return err == nil
	})
	if err := asker.Barrier(ctx); err != nil { // the promotion is applied here too
		t.Fatal(err)
	}
	view, err := asker.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range view.Servers {
		if !s.Voter {
			t.Fatalf("%s not a voter after promotion: %+v", s.ID, view)
		}
	}
	if err := asker.Promote(ctx, "n4", false); err != nil {
		t.Fatalf("promoting a voter again = %v, want nil (nothing to do)", err)
	}
}

// TestPromoteUnreachableLearner: a learner that does not answer is not
// promoted unless forced.
func TestPromoteUnreachableLearner(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	addrs, err := loopback.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	n4, err := Open(c.JoinConfig("n4", addrs[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Store(leader).AddNonvoter(ctx, "n4", addrs[0]); err != nil {
		t.Fatal(err)
	}
	n4.Close()
	testsupport.WaitFor(t, "the leader to see n4 down", 10*time.Second, func() bool {
		ps, ok := c.Store(leader).peers.peer("n4")
		return ok && !ps.Reachable
	})
	if err := c.Store(leader).Promote(ctx, "n4", false); !errors.Is(err, storeapi.ErrNotCaughtUp) {
		t.Fatalf("promoting a learner that is down = %v, want ErrNotCaughtUp", err)
	}
	// Removing the learner never weighs on the quorum.
	if err := c.Store(leader).RemoveServer(ctx, "n4", false); err != nil {
		t.Fatalf("removing the down learner: %v", err)
	}
}

// TestClusterViewReportsPeers: each member's reachability, last contact and
// match index come from the leader's probes, whichever node is asked; a
// stopped member shows as unreachable, not as a follower.
func TestClusterViewReportsPeers(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	if _, err := c.Store(leader).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("k"), Value: []byte("v")})); err != nil {
		t.Fatal(err)
	}
	asker := c.Store((leader + 1) % 3)
	testsupport.WaitFor(t, "every member reachable in the leader's view", 10*time.Second, func() bool {
		v, err := asker.Cluster(ctx)
		if err != nil || v.View != c.Cfgs[leader].NodeID || len(v.Servers) != 3 {
			return false
		}
		for _, s := range v.Servers {
			if !s.Reachable || s.LastContactMS < 0 || s.MatchIndex == 0 {
				return false
			}
		}
		return true
	})
	down := (leader + 2) % 3
	c.Stop(down)
	testsupport.WaitFor(t, "the stopped member shown unreachable", 10*time.Second, func() bool {
		v, err := asker.Cluster(ctx)
		if err != nil {
			return false
		}
		for _, s := range v.Servers {
			if s.ID == c.Cfgs[down].NodeID {
				return !s.Reachable && s.State == "unreachable" && s.LastContactMS >= 0
			}
		}
		return false
	})
}

// TestHandOffBeforeStop: a leader that stops hands leadership on; a
// follower has nothing to hand.
func TestHandOffBeforeStop(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 10*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	if err := c.Store((leader + 1) % 3).HandOff(ctx); err != nil {
		t.Fatalf("a follower's hand-off = %v, want nil", err)
	}
	if err := c.Store(leader).HandOff(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Store(leader).IsLeader() {
		t.Fatal("still the leader after handing off")
	}
	next := c.WaitLeader(5 * time.Second)
	if next == leader {
		t.Fatal("the leadership came back to the node that handed it off")
	}
}

// TestReadyWhileBehindTheLeader: a follower that has not applied what its
// leader had applied a probe period ago is not ready, though its own commit
// index (which only log replication moves) says it is caught up.
func TestReadyWhileBehindTheLeader(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	leader := c.WaitLeader(5 * time.Second)
	f := c.Store((leader + 1) % 3)
	testsupport.WaitFor(t, "the follower ready", 10*time.Second, f.Ready)
	lid := c.Cfgs[leader].NodeID
	testsupport.WaitFor(t, "the follower to have probed its leader", 10*time.Second, func() bool {
		f.peers.mu.Lock()
		defer f.peers.mu.Unlock()
		p := f.peers.peers[lid]
		return p != nil && p.ok
	})
	// What a stuck follower sees: the leader reported, two seconds ago, an
	// index this node has not applied.
	f.peers.mu.Lock()
	p := f.peers.peers[lid]
	p.applied[p.next%len(p.applied)] = appliedAt{at: time.Now().Add(-2 * time.Second), index: f.FSM().AppliedIndex() + 1000}
	p.next++
	f.peers.mu.Unlock()
	if f.Ready() || f.NotReady() != "catching up: applying what the cluster committed" {
		t.Fatalf("a follower behind its leader: ready=%v, %q", f.Ready(), f.NotReady())
	}
	if !c.Store(leader).Ready() {
		t.Fatal("the leader is never behind itself")
	}
}
