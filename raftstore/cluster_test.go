package raftstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestSETNXRaceOneWinner(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	const racers = 64
	var wg sync.WaitGroup
	results := make([]*command.Result, racers)
	errs := make([]error, racers)
	start := make(chan struct{})
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			s := c.Stores[i%3]
			results[i], errs[i] = s.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("hot"), Value: []byte(fmt.Sprint("v", i)), TTL: time.Minute, Mode: command.SetNX}))
		}(i)
	}
	close(start)
	wg.Wait()
	winners := 0
	var winner string
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("racer %d: %v", i, errs[i])
		}
		if r.Code == command.CodeCreated {
			winners++
			winner = fmt.Sprint("v", i)
		}
	}
	if winners != 1 {
		t.Fatalf("SETNX winners = %d, want exactly 1", winners)
	}
	for i, r := range results {
		if r.Code == command.CodeExists && string(r.Value) != winner {
			t.Fatalf("loser %d saw value %q, want the winner's %q", i, r.Value, winner)
		}
	}
	for _, s := range c.Stores {
		e, err := s.KV(ctx, []byte("hot"), false)
		if err != nil || string(e.Value) != winner {
			t.Fatalf("%s linearizable read = %q, %v; want %q", s.NodeID(), e.Value, err, winner)
		}
	}
}

func TestGETDELTokenRaceOneWinner(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	key := command.TokenKey("pay", "tok-1")
	if _, err := c.Stores[1].IssueToken(ctx, key, time.Minute); err != nil {
		t.Fatal(err)
	}
	var wins, gone atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			err := c.Stores[i%3].ConsumeToken(ctx, key)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, command.ErrNotFound):
				gone.Add(1)
			default:
				t.Errorf("consume %d: %v", i, err)
			}
		}(i)
	}
	close(start)
	wg.Wait()
	if wins.Load() != 1 || gone.Load() != 63 {
		t.Fatalf("token consumed %d times (%d refused), want exactly once", wins.Load(), gone.Load())
	}
}

func TestLinearizableReadOnFollower(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	follower := c.Stores[(leader+1)%3]
	for i := 0; i < 50; i++ {
		k := []byte(fmt.Sprint("k", i))
		if _, err := c.Stores[leader].ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: k, Value: []byte("v")})); err != nil {
			t.Fatal(err)
		}
		// Acknowledged on the leader, read at once on a follower.
		if _, err := follower.KV(ctx, k, false); err != nil {
			t.Fatalf("follower read of acknowledged %s: %v", k, err)
		}
	}
	if !follower.Ready() {
		t.Fatal("follower not ready after reads")
	}
}

// TestLeaderStopMidRun: writers on every node; the leader is stopped mid-run;
// the survivors elect; every acknowledged write is still there; the stopped
// node restarts from its files and catches up.
func TestLeaderStopMidRun(t *testing.T) {
	c := StartTestCluster(t, 3, func(cfg *Config) { cfg.SnapshotThreshold = 200; cfg.TrailingLogs = 50 })
	ctx := ctxT(t, 60*time.Second)
	leader := c.WaitLeader(5 * time.Second)

	var mu sync.Mutex
	acked := map[string]string{}
	stopWriters := make(chan struct{})
	var wg sync.WaitGroup
	var stores sync.Map // index -> *Store, swapped as nodes stop
	for i, s := range c.Stores {
		stores.Store(i, s)
	}
	for w := 0; w < 12; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stopWriters:
					return
				default:
				}
				v, _ := stores.Load(w % 3)
				s, _ := v.(*Store)
				if s == nil {
					v, _ = stores.Load((w + 1) % 3)
					s, _ = v.(*Store)
				}
				if s == nil {
					continue
				}
				k, val := fmt.Sprintf("w%d-%d", w, n), fmt.Sprint(n)
				wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				_, err := s.ApplyKV(wctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(k), Value: []byte(val), Mode: command.SetNX}))
				cancel()
				if err == nil {
					mu.Lock()
					acked[k] = val
					mu.Unlock()
				}
			}
		}(w)
	}
	time.Sleep(700 * time.Millisecond)
	stores.Store(leader, (*Store)(nil))
	c.Stop(leader)
	stoppedAt := time.Now()
	newLeader := c.WaitLeader(10 * time.Second)
	t.Logf("leader %s stopped; %s elected after %s", c.Cfgs[leader].NodeID, c.Cfgs[newLeader].NodeID, time.Since(stoppedAt))
	// Writes go on at least 700 ms more, and until 50 were acknowledged
	// (fewer a second on a busy machine), at most 20 s.
	for deadline, floor := time.Now().Add(20*time.Second), time.Now().Add(700*time.Millisecond); time.Now().Before(deadline); {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 50 && time.Now().After(floor) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stopWriters)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if len(acked) < 50 {
		t.Fatalf("only %d writes acknowledged: the cluster barely served", len(acked))
	}
	for i, s := range c.Stores {
		if s == nil {
			continue
		}
		for k, v := range acked {
			e, err := s.KV(ctx, []byte(k), false)
			if err != nil || string(e.Value) != v {
				t.Fatalf("%s lost acknowledged write %s=%s: got %q, %v", c.Cfgs[i].NodeID, k, v, e.Value, err)
			}
		}
	}
	c.Start(leader)
	c.WaitConverged(20 * time.Second)
	for k, v := range acked {
		e, err := c.Stores[leader].KV(ctx, []byte(k), false)
		if err != nil || string(e.Value) != v {
			t.Fatalf("restarted %s missing %s: %q, %v", c.Cfgs[leader].NodeID, k, e.Value, err)
		}
	}
	t.Logf("%d acknowledged writes, all present on every node", len(acked))
}

func TestMembershipRemoveAndAdd(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	ctx := ctxT(t, 30*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	victim := (leader + 1) % 3
	asker := c.Stores[(leader+2)%3] // a follower: the change is forwarded
	if err := asker.RemoveServer(ctx, c.Cfgs[victim].NodeID, false); err != nil {
		t.Fatal(err)
	}
	if err := asker.RemoveServer(ctx, "nope", false); !errors.Is(err, storeapi.ErrUnknownNode) {
		t.Fatalf("remove of unknown node = %v, want ErrUnknownNode", err)
	}
	servers, _ := c.Stores[leader].Servers()
	if len(servers) != 2 {
		t.Fatalf("servers after remove = %v", servers)
	}
	c.Stop(victim)
	// A node that does not answer is not added: it would count against
	// the quorum at once.
	if err := asker.AddVoter(ctx, c.Cfgs[victim].NodeID, c.Cfgs[victim].RaftBind); !errors.Is(err, storeapi.ErrUnreachableNode) {
		t.Fatalf("adding a stopped node = %v, want ErrUnreachableNode", err)
	}
	c.Start(victim)
	if err := asker.AddVoter(ctx, c.Cfgs[victim].NodeID, c.Cfgs[victim].RaftBind); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stores[leader].ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("after"), Value: []byte("x")})); err != nil {
		t.Fatal(err)
	}
	c.WaitConverged(20 * time.Second)
	servers, _ = c.Stores[victim].Servers()
	if len(servers) != 3 {
		t.Fatalf("servers after re-add = %v", servers)
	}
}

func TestSingleNodeBootstrapsAlone(t *testing.T) {
	c := StartTestCluster(t, 1, nil)
	ctx := ctxT(t, 10*time.Second)
	if _, err := c.Stores[0].ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("k"), Value: []byte("v"), TTL: time.Second, Mode: command.SetNX})); err != nil {
		t.Fatal(err)
	}
	c.Stop(0)
	c.Start(0)
	c.WaitLeader(5 * time.Second)
	e, err := c.Stores[0].KV(ctx, []byte("k"), false)
	if err != nil || string(e.Value) != "v" {
		t.Fatalf("after restart: %q, %v", e.Value, err)
	}
}

func TestSweeperExpiresOnLeader(t *testing.T) {
	c := StartTestCluster(t, 3, func(cfg *Config) { cfg.Sweeper.Interval = 50 * time.Millisecond })
	ctx := ctxT(t, 30*time.Second)
	for i := 0; i < 20; i++ {
		if _, err := c.Stores[i%3].ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprint("e", i)), Value: []byte("v"), TTL: 100 * time.Millisecond})); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		due, _ := c.Stores[0].Due(time.Now().Add(time.Hour), 100)
		if len(due) == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.WaitConverged(10 * time.Second)
	for _, s := range c.Stores {
		if due, _ := s.Due(time.Now().Add(time.Hour), 100); len(due) != 0 {
			t.Fatalf("%s still indexes %d entries after the sweep", s.NodeID(), len(due))
		}
	}
}

func TestNoQuorumIsUnavailable(t *testing.T) {
	c := StartTestCluster(t, 3, func(cfg *Config) { cfg.ApplyTimeout = 1500 * time.Millisecond })
	leader := c.WaitLeader(5 * time.Second)
	c.Stop((leader + 1) % 3)
	c.Stop((leader + 2) % 3)
	start := time.Now()
	_, err := c.Stores[leader].ApplyKV(context.Background(), command.KVSetCommand(command.KVSetRequest{Key: []byte("k"), Value: []byte("v")}))
	if !storeapi.Unavailable(err) {
		t.Fatalf("write without quorum = %v, want an unavailable error", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("write without quorum took %s: not bounded by ApplyTimeout", time.Since(start))
	}
}

// TestRebuildAfterUncleanReboot: a node whose state machine file cannot be
// trusted (an unclean stop across a reboot) discards it and rebuilds from
// the newest snapshot and the Raft log, ending equal to the others.
func TestRebuildAfterUncleanReboot(t *testing.T) {
	c := StartTestCluster(t, 3, func(cfg *Config) {
		cfg.SnapshotThreshold = 100
		cfg.TrailingLogs = 20
		cfg.SnapshotInterval = 200 * time.Millisecond
	})
	ctx := ctxT(t, 60*time.Second)
	for i := 0; i < 400; i++ {
		if _, err := c.Stores[i%3].ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint(i))})); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // let snapshots happen
	victim := (c.WaitLeader(5*time.Second) + 1) % 3
	c.Stop(victim)
	path := filepath.Join(c.Cfgs[victim].DataDir, "fsm.db")
	os.Remove(path + ".clean")
	if err := os.WriteFile(path+".boot", []byte("a-boot-before-a-power-loss\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 400; i < 450; i++ { // writes it missed while down
		if _, err := c.Stores[(victim+1)%3].ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint(i))})); err != nil {
			t.Fatal(err)
		}
	}
	c.Start(victim)
	c.WaitConverged(20 * time.Second)
	if aside, _ := filepath.Glob(path + ".unclean-*"); len(aside) != 1 {
		t.Fatalf("the untrusted file was not moved aside: %v", aside)
	}
	for i := 0; i < 450; i++ {
		e, err := c.Stores[victim].KV(ctx, []byte(fmt.Sprint("k", i)), true)
		if err != nil || string(e.Value) != fmt.Sprint(i) {
			t.Fatalf("rebuilt node: k%d = %q, %v", i, e.Value, err)
		}
	}
}

// TestCloseWithAppliesInFlight: closing a node while writers hammer it must
// answer every call (result or error), never leave one waiting: raft does
// not answer futures still queued when it shuts down.
func TestCloseWithAppliesInFlight(t *testing.T) {
	for round := 0; round < 3; round++ {
		c := StartTestCluster(t, 3, nil)
		leader := c.WaitLeader(5 * time.Second)
		s := c.Stores[leader]
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := 0; w < 32; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					_, err := s.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprintf("w%d-%d", w, i)), Value: []byte("v")}))
					cancel()
					if err != nil {
						return
					}
				}
			}(w)
		}
		time.Sleep(300 * time.Millisecond)
		c.Stop(leader)
		close(stop)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("round %d: writers still waiting 15s after the node closed\n%s", round, buf[:n])
		}
		c.Close()
	}
}

// TestInvalidCommandNeverProposed: a command that breaks the state
// machine's rules is refused by the proposer, before the log: the commit
// index does not move.
func TestInvalidCommandNeverProposed(t *testing.T) {
	c := StartTestCluster(t, 1, nil)
	s := c.Store(0)
	ctx := ctxT(t, 5*time.Second)
	if err := s.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	before := s.Raft().LastIndex()
	for _, cmd := range []*command.Command{
		command.KVSetCommand(command.KVSetRequest{Key: []byte("k"), TTL: 2562047 * time.Hour}),
		command.KVSetCommand(command.KVSetRequest{Key: make([]byte, command.MaxStoredKeyLen+1)}),
		command.RecordBeginCommand(command.BeginRequest{}),
		{Type: 200, Key: []byte("k")}, // forged: no such command
	} {
		if _, err := s.Apply(ctx, cmd); !errors.Is(err, command.ErrBadCommand) {
			t.Fatalf("Apply(%s) = %v, want ErrBadCommand", cmd.Type, err)
		}
	}
	if after := s.Raft().LastIndex(); after != before {
		t.Fatalf("the log moved from %d to %d: an invalid command was proposed", before, after)
	}
}
