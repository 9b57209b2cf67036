package raftstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/storeapi"
)

// readyGauge is idemgate_ready as s's registered collectors report it.
func readyGauge(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "idemgate_ready" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no idemgate_ready")
	return -1
}

// TestReadyBehindWhenApplyStalls: a follower whose state machine stops
// applying (its apply goroutine held) while it keeps hearing its leader is
// not ready, says it is catching up, and idemgate_ready says 0 with it;
// once it applies again it is ready. The leader stays ready throughout.
func TestReadyBehindWhenApplyStalls(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 60*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	fi := (leader + 1) % 3
	f := c.Store(fi)
	reg := prometheus.NewRegistry()
	if err := f.Register(reg); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, "the follower ready", 10*time.Second, f.Ready)
	if g := readyGauge(t, reg); g != 1 {
		t.Fatalf("a ready follower's idemgate_ready = %v", g)
	}

	// The apply goroutine blocks once it has applied its next batch: it
	// wakes the node's readers under this lock.
	f.wrap.mu.Lock()
	stalled := true
	defer func() {
		if stalled {
			f.wrap.mu.Unlock()
		}
	}()
	for i := 0; i < 20; i++ {
		if _, err := c.Store(leader).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprint("k", i)), Value: []byte("v")})); err != nil {
			t.Fatal(err)
		}
	}
	if id, _ := f.Leader(); id != c.Cfgs[leader].NodeID {
		t.Fatalf("the stalled follower knows leader %q, want %s: this is not the state under test", id, c.Cfgs[leader].NodeID)
	}
	testsupport.WaitFor(t, "the stalled follower not ready", 10*time.Second, func() bool { return !f.Ready() })
	if why := f.NotReady(); why != "catching up: applying what the cluster committed" {
		t.Fatalf("the stalled follower is not ready because %q", why)
	}
	if g := readyGauge(t, reg); g != 0 {
		t.Fatalf("a stalled follower's idemgate_ready = %v, readyz says %q", g, f.NotReady())
	}
	if !c.Store(leader).Ready() {
		t.Fatalf("the leader is not ready: %q", c.Store(leader).NotReady())
	}

	f.wrap.mu.Unlock()
	stalled = false
	testsupport.WaitFor(t, "the follower ready once it applies again", 10*time.Second, f.Ready)
	if g := readyGauge(t, reg); g != 1 {
		t.Fatalf("a caught-up follower's idemgate_ready = %v", g)
	}
}

// TestReadyBehindRules: what "behind" means, on a real node's applied
// index: more than readyMaxLag entries short of the commit index is behind
// at once (a node replaying after a restart); within that bound a node is
// behind only when it has not applied what it knew committed readyLag ago.
func TestReadyBehindRules(t *testing.T) {
	c := StartTestCluster(t, 1, nil)
	s := c.Store(0)
	testsupport.WaitFor(t, "the node ready", 10*time.Second, s.Ready)
	now := time.Now()
	// Raft's applied index counts the no-ops the state machine never sees:
	// an index past it is one this node has surely not applied.
	applied, top := s.FSM().AppliedIndex(), s.Raft().AppliedIndex()
	cases := []struct {
		name    string
		commit  uint64
		samples []indexAt
		behind  bool
	}{
		{"caught up, nothing sampled", applied, nil, false},
		{"the bound short, nothing sampled", top + readyMaxLag, nil, false},
		{"past the bound: behind at once", top + readyMaxLag + 1, nil, true},
		{"applied what it knew committed a second ago", top + 5, []indexAt{{now.Add(-1500 * time.Millisecond), applied}}, false},
		{"short of what was committed a moment ago", top + 5, []indexAt{{now.Add(-100 * time.Millisecond), top + 5}}, false},
		{"short of what was committed a second ago", top + 5, []indexAt{{now.Add(-1100 * time.Millisecond), top + 5}}, true},
		{"short of what was committed long ago: no longer sampled", top + 5, []indexAt{{now.Add(-5 * time.Second), top + 5}}, false},
		{"the newest sample a second old decides", top + 5, []indexAt{
			{now.Add(-1900 * time.Millisecond), top + 5}, {now.Add(-1200 * time.Millisecond), applied}, {now.Add(-200 * time.Millisecond), top + 5}}, false},
	}
	for _, tc := range cases {
		// A sample the sampler adds meanwhile is younger than now: no case
		// reads it.
		s.health.mu.Lock()
		s.health.commits = [len(s.health.commits)]indexAt{}
		copy(s.health.commits[:], tc.samples)
		s.health.mu.Unlock()
		got := s.behindCommitted(tc.commit, now)
		if got != tc.behind {
			t.Errorf("%s: behind = %v, want %v", tc.name, got, tc.behind)
		}
	}
}

// TestNoLeaderAnswersAtOnce: with two of three nodes stopped, the survivor
// answers writes, linearizable reads and pipelined writes storeapi.ErrNoLeader long
// before its apply timeout (a minute here): at most an election timeout
// after it lost its leader, and at once for every call after that.
func TestNoLeaderAnswersAtOnce(t *testing.T) {
	for _, survivorLed := range []bool{true, false} {
		t.Run(map[bool]string{true: "the survivor was leader", false: "the survivor was a follower"}[survivorLed], func(t *testing.T) {
			c := StartTestCluster(t, 3, func(cfg *Config) { cfg.ApplyTimeout = time.Minute })
			s := c.WaitLeader(5 * time.Second)
			if !survivorLed {
				s = (s + 1) % 3
			}
			for i := range c.Cfgs {
				if i != s {
					c.Stop(i)
				}
			}
			st := c.Store(s)
			calls := []struct {
				name string
				call func(context.Context) error
			}{
				{"write", func(ctx context.Context) error {
					_, err := st.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("k"), Value: []byte("v")}))
					return err
				}},
				{"linearizable read", func(ctx context.Context) error { _, err := st.KV(ctx, []byte("k"), false); return err }},
				{"barrier without a deadline", func(context.Context) error { return st.Barrier(context.Background()) }},
				{"pipelined writes", func(ctx context.Context) error {
					var ops []*command.Command
					for i := 0; i < 5; i++ {
						ops = append(ops, command.KVIncrCommand([]byte(fmt.Sprint("p", i)), 1))
					}
					// Each command is ErrNoLeader, or ErrTimeout if it
					// was logged; the pipeline's answer is its worst.
					worst := storeapi.ErrNoLeader
					for _, r := range st.ApplyInOrder(ctx, ops) {
						switch {
						case errors.Is(r.Err, storeapi.ErrTimeout):
							worst = r.Err
						case !errors.Is(r.Err, storeapi.ErrNoLeader):
							return r.Err
						}
					}
					return worst
				}},
			}
			// Each call gets 20 s, a third of the apply timeout: an answer
			// within it came from knowing no leader, not from a deadline.
			for round := 0; round < 2; round++ {
				for _, tc := range calls {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					logged := st.Raft().LastIndex()
					err := tc.call(ctx)
					early := ctx.Err() == nil
					cancel()
					// A write the survivor logged while it still led may yet
					// be committed: its fate is unknown (ErrTimeout, see
					// TestLostQuorumMidWriteIsFateUnknown).
					want := storeapi.ErrNoLeader
					if st.Raft().LastIndex() != logged {
						want = storeapi.ErrTimeout
					}
					if !errors.Is(err, want) || !early {
						t.Errorf("round %d: %s without a quorum = %v (before the test's deadline: %v), want %v before it", round, tc.name, err, early, want)
					}
				}
			}
			if st.Ready() || st.NotReady() != "no leader is known: the cluster has no quorum, or an election is under way" {
				t.Errorf("the survivor's readiness: ready=%v %q", st.Ready(), st.NotReady())
			}
		})
	}
}

// TestRemovedRefusesAtOnce: a removed node refuses writes, pipelined
// writes and linearizable reads (storeapi.ErrRemoved, an unavailable error) from
// the moment it sees its removal, and SeenRemoved says so within a few
// samples; re-added, it serves again.
func TestRemovedRefusesAtOnce(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 60*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	ri := (leader + 1) % 3
	r := c.Store(ri)
	if err := c.Store(leader).RemoveServer(ctx, c.Cfgs[ri].NodeID, false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !r.Removed() {
		if time.Now().After(deadline) {
			// Raft's last AppendEntries to a node it removes is best
			// effort: say what this node has, to tell that from a bug here.
			lid, _ := r.Leader()
			t.Fatalf("the node did not see its removal within 10s: state %s, leader %q, last index %d (the leader's %d), servers %+v",
				r.Raft().State(), lid, r.Raft().LastIndex(), c.Store(leader).Raft().LastIndex(), r.Raft().GetConfiguration().Configuration().Servers)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := r.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("k"), Value: []byte("v")})); !errors.Is(err, storeapi.ErrRemoved) || !storeapi.Unavailable(err) {
		t.Errorf("write on a removed node = %v, want ErrRemoved", err)
	}
	if _, err := r.KV(ctx, []byte("k"), false); !errors.Is(err, storeapi.ErrRemoved) {
		t.Errorf("linearizable read on a removed node = %v, want ErrRemoved", err)
	}
	for _, res := range r.ApplyInOrder(ctx, []*command.Command{command.KVIncrCommand([]byte("p"), 1)}) {
		if !errors.Is(res.Err, storeapi.ErrRemoved) {
			t.Errorf("pipelined write on a removed node = %v, want ErrRemoved", res.Err)
		}
	}
	testsupport.WaitFor(t, "SeenRemoved", 5*time.Second, r.SeenRemoved)
	if _, err := c.Store(leader).KV(ctx, []byte("k"), false); !errors.Is(err, command.ErrNotFound) {
		t.Errorf("the refused write reached the cluster: %v", err)
	}

	if err := c.Store(leader).AddVoter(ctx, c.Cfgs[ri].NodeID, c.Cfgs[ri].RaftBind); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, "the re-added node serving", 10*time.Second, func() bool { return !r.Removed() && !r.SeenRemoved() })
	if _, err := r.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("k2"), Value: []byte("v")})); err != nil {
		t.Errorf("write on the re-added node = %v", err)
	}
}

// TestLostQuorumMidWriteIsFateUnknown: a write the leader has logged when
// it loses its quorum may still be committed by the next leader, so the
// call that gives up must answer storeapi.ErrTimeout ("may or may not
// have been applied"), never storeapi.ErrNoLeader, which says nothing was
// done and on which clients (Redis ones on CLUSTERDOWN) retry: an INCR
// retried there could count twice.
func TestLostQuorumMidWriteIsFateUnknown(t *testing.T) {
	c := StartTestCluster(t, 3, func(cfg *Config) {
		cfg.ApplyTimeout = time.Minute
		// The leader keeps leading for 2 s after its followers stop, so
		// the write below reaches its log.
		cfg.LeaderLeaseTimeout = 2 * time.Second
		cfg.HeartbeatTimeout = 2 * time.Second
		cfg.ElectionTimeout = 2 * time.Second
	})
	l := c.WaitLeader(5 * time.Second)
	st := c.Store(l)
	for i := range c.Cfgs {
		if i != l {
			c.Stop(i)
		}
	}
	before := st.Raft().LastIndex()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := st.ApplyKV(ctx, command.KVIncrCommand([]byte("counter"), 1))
	if st.Raft().LastIndex() == before {
		t.Skipf("the leader stepped down before logging the write (%v): nothing to check", err)
	}
	if !errors.Is(err, storeapi.ErrTimeout) || errors.Is(err, storeapi.ErrNoLeader) || !storeapi.Unavailable(err) {
		t.Fatalf("write logged by a leader that lost its quorum = %v, want ErrTimeout (fate unknown)", err)
	}
	if ctx.Err() != nil {
		t.Errorf("the call waited for the test's deadline: %v", err)
	}
}
