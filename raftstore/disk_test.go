package raftstore

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/storeapi"
)

// TestDiskGuard: a node short of space refuses writes (its own and those
// forwarded to it) with storeapi.ErrDiskFull, and a node nearly out of space stops
// its Raft cleanly; the others go on.
func TestDiskGuard(t *testing.T) {
	setFree := stubFreeBytes(t)
	c := StartTestCluster(t, 3, func(cfg *Config) { cfg.MinFreeBytes, cfg.DiskCheckInterval = 1<<20, 20*time.Millisecond })
	ctx := ctxT(t, 30*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	follower := (leader + 1) % 3
	set := func(i int, k string) error {
		_, err := c.Store(i).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(k), Value: []byte("v")}))
		return err
	}

	setFree(c.Cfgs[follower].DataDir, 512<<10) // low: refuses its clients' writes
	if err := set(follower, "a"); !errors.Is(err, storeapi.ErrDiskFull) || !storeapi.Unavailable(err) {
		t.Fatalf("write on a low node = %v, want ErrDiskFull (unavailable)", err)
	}
	if c.Store(follower).Ready() || !c.Store(follower).Alive() {
		t.Fatal("a node refusing writes for its disk says it is ready (readyz 200), or not alive")
	}
	if err := set(leader, "b"); err != nil {
		t.Fatalf("write on a healthy leader = %v", err)
	}
	setFree(c.Cfgs[follower].DataDir, 1<<40)
	waitReady := func(i int) {
		deadline := time.Now().Add(5 * time.Second)
		for !c.Store(i).Ready() {
			if time.Now().After(deadline) {
				t.Fatalf("node %d not ready again once space came back", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitReady(follower)
	setFree(c.Cfgs[leader].DataDir, 512<<10) // the leader low: forwarded writes refused too
	if err := set(follower, "c"); !errors.Is(err, storeapi.ErrDiskFull) {
		t.Fatalf("write forwarded to a low leader = %v, want ErrDiskFull", err)
	}
	setFree(c.Cfgs[leader].DataDir, 1<<40)
	if err := set(follower, "d"); err != nil {
		t.Fatalf("write after space came back = %v", err)
	}
	// Nearly out of space: the node stops its Raft; the others elect and go on.
	setFree(c.Cfgs[leader].DataDir, 100<<10)
	deadline := time.Now().Add(10 * time.Second)
	for c.Store(leader).Raft().State().String() != "Shutdown" {
		if time.Now().After(deadline) {
			t.Fatal("a node nearly out of space did not stop its raft")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c.Store(leader).Alive() || c.Store(leader).Ready() {
		t.Fatal("a node whose raft stopped says it is alive (healthz 200) or ready")
	}
	// The survivors answer 503 at once while they elect (no leader known
	// for an election timeout), as a client sees it: retried, the write
	// goes through once they have.
	survivor := (leader + 2) % 3
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err = c.Store(survivor).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("e"), Value: []byte("v")})); err == nil || !storeapi.Unavailable(err) {
			break
		}
	}
	if err != nil {
		t.Fatalf("the cluster stopped with the node: %v", err)
	}
}

// stubFreeBytes makes freeBytes answer 1 TiB for every directory but those
// the returned setFree sets (which waits a few checks of a 20 ms guard).
// Call it before starting a cluster: it is restored after the cluster
// stops (cleanups run last-registered first), as the disk watchers read
// freeBytes until then.
func stubFreeBytes(t *testing.T) (setFree func(dir string, n uint64)) {
	var mu sync.Mutex
	free := map[string]uint64{}
	saved := freeBytes
	freeBytes = func(dir string) (uint64, error) {
		mu.Lock()
		defer mu.Unlock()
		if f, ok := free[dir]; ok {
			return f, nil
		}
		return 1 << 40, nil
	}
	t.Cleanup(func() { freeBytes = saved })
	return func(dir string, n uint64) {
		mu.Lock()
		free[dir] = n
		mu.Unlock()
		time.Sleep(100 * time.Millisecond) // a few checks
	}
}

// errLogWriteFailed is what a held log write answers in TestDiskGuardStopIsFinal.
var errLogWriteFailed = errors.New("test: log write failed (disk full)")

// TestDiskGuardStopIsFinal: once the disk guard has stopped a node's Raft,
// the node stays stopped as health, readiness, the metrics and its status
// see it, whatever raft's own state says afterwards; and closing it waits
// for raft's goroutines before it closes the stores under them.
// hashicorp/raft (v1.7.3) sets its state back after Shutdown when a
// goroutine of its own was mid-step: here the leader's log write, held
// while the guard stops the node, then failing as a full disk makes it
// fail (raft steps down: state follower), as an AppendEntries in flight
// or a heartbeat timeout racing the stop do. A node that read raft's state
// answered /healthz 200 and never exited: a zombie replicating nothing.
// And Close, shutting raft down a second time (a future that waits for
// nothing), closed the log store under raft's goroutine: "database not
// open" panics.
func TestDiskGuardStopIsFinal(t *testing.T) {
	setFree := stubFreeBytes(t)
	g := &logGate{}
	c := StartTestCluster(t, 3, func(cfg *Config) {
		cfg.MinFreeBytes, cfg.DiskCheckInterval = 1<<20, 20*time.Millisecond
		node := cfg.NodeID
		cfg.wrapLogStore = func(s raft.LogStore) raft.LogStore { return &gatedLogStore{LogStore: s, node: node, g: g} }
	})
	ctx := ctxT(t, 60*time.Second)

	// holdAndStop holds the leader's next log write, then has the disk
	// guard stop the leader while raft's main goroutine is inside it.
	holdAndStop := func(leader int) (release func(answer error) (storeOpen bool)) {
		s := c.Store(leader)
		entered, release := g.arm(s.NodeID())
		go s.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("held"), Value: []byte("v")}))
		select {
		case <-entered:
		case <-ctx.Done():
			t.Fatal("the leader's log write was never held")
		}
		setFree(c.Cfgs[leader].DataDir, 100<<10) // under a quarter of MinFreeBytes
		testsupport.WaitFor(t, "the disk guard to stop raft", 20*time.Second, func() bool { return s.Raft().State() == raft.Shutdown })
		return release
	}

	// 1. The stop is final: raft's state set back to follower after the
	// guard's stop changes nothing the node answers.
	leader := c.WaitLeader(5 * time.Second)
	s := c.Store(leader)
	reg := prometheus.NewRegistry()
	if err := s.Register(reg); err != nil {
		t.Fatal(err)
	}
	holdAndStop(leader)(errLogWriteFailed)
	testsupport.WaitFor(t, "raft to set its state back after the failed write", 20*time.Second, func() bool { return s.Raft().State() == raft.Follower })
	if s.Alive() || s.Ready() {
		t.Errorf("the disk guard stopped the node, raft then set its state back to %v: Alive %v, Ready %v; want a node stopped for good (healthz 503)",
			s.Raft().State(), s.Alive(), s.Ready())
	}
	if got := gaugeValue(t, reg, "idemgate_raft_state"); got != float64(raft.Shutdown) {
		t.Errorf("idemgate_raft_state = %v after the guard's stop, want %d (shutdown)", got, raft.Shutdown)
	}
	if st := s.Status(); st.Role != "shutdown" {
		t.Errorf("status role = %q after the guard's stop, want shutdown", st.Role)
	}
	select {
	case <-s.Stopped():
	default:
		t.Error("Stopped() is not closed after the guard's stop")
	}
	if err := s.StopReason(); !errors.Is(err, storeapi.ErrDiskFull) {
		t.Errorf("StopReason() = %v, want the disk (storeapi.ErrDiskFull)", err)
	}

	// 2. Closing waits for raft's goroutines: the survivors elect; their
	// leader is stopped by its guard with its log write held, and closed.
	// The write, released once Close had two seconds to go wrong, must
	// find the log store still open.
	c.Stop(leader)
	leader = c.WaitLeader(20 * time.Second)
	release := holdAndStop(leader)
	closed := make(chan struct{})
	go func() { defer close(closed); c.Stop(leader) }()
	select {
	case <-closed: // closed without waiting for raft: the write below finds the store closed
	case <-time.After(2 * time.Second): // a Close that waits never fails for this wait
	}
	if !release(errLogWriteFailed) {
		t.Error("Close closed the log store while raft's goroutine was still writing to it (raft panics: database not open)")
	}
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("Close did not return once raft's goroutine left the log store")
	}
	if err := s.Close(); err != nil { // the first node, closed twice: safe
		t.Errorf("a second Close = %v", err)
	}
}

// logGate holds the next log write of one node (arm) until released.
type logGate struct {
	mu      sync.Mutex
	node    string
	entered chan struct{}
	answer  chan error
	open    chan bool
}

// arm holds node's next StoreLogs: entered is closed once it is held;
// release makes it answer err and reports whether the node's log store
// was still open then.
func (g *logGate) arm(node string) (entered <-chan struct{}, release func(err error) bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.node, g.entered, g.answer, g.open = node, make(chan struct{}), make(chan error), make(chan bool)
	answer, open := g.answer, g.open
	return g.entered, func(err error) bool { answer <- err; return <-open }
}

// gatedLogStore is a node's real log store behind a logGate.
type gatedLogStore struct {
	raft.LogStore
	node string
	g    *logGate
}

func (s *gatedLogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *gatedLogStore) StoreLogs(logs []*raft.Log) error {
	s.g.mu.Lock()
	held := s.g.node == s.node
	entered, answer, open := s.g.entered, s.g.answer, s.g.open
	if held {
		s.g.node = ""
	}
	s.g.mu.Unlock()
	if !held {
		return s.LogStore.StoreLogs(logs)
	}
	close(entered)
	err := <-answer
	_, lerr := s.LogStore.LastIndex() // bbolt: "database not open" once closed
	open <- lerr == nil
	return err
}

// gaugeValue is the value of the gauge name in reg.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}
