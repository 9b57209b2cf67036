package raftstore

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/storeapi"
)

// TestDiskGuard: a node short of space refuses writes (its own and those
// forwarded to it) with storeapi.ErrDiskFull, and a node nearly out of space stops
// its Raft cleanly; the others go on.
func TestDiskGuard(t *testing.T) {
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
	// Restored after the cluster stops (cleanups run last-registered first):
	// its disk watchers read freeBytes until then.
	t.Cleanup(func() { freeBytes = saved })
	setFree := func(dir string, n uint64) {
		mu.Lock()
		free[dir] = n
		mu.Unlock()
		time.Sleep(100 * time.Millisecond) // a few checks
	}
	c := StartTestCluster(t, 3, func(cfg *Config) { cfg.MinFreeBytes, cfg.DiskCheckInterval = 1<<20, 20*time.Millisecond })
	ctx := ctxT(t, 30*time.Second)
	leader := c.WaitLeader(5 * time.Second)
	follower := (leader + 1) % 3
	set := func(i int, k string) error {
		_, err := c.Store(i).ApplyKV(ctx, fsm.KVSetCommand(fsm.KVSetRequest{Key: []byte(k), Value: []byte("v")}))
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
		if _, err = c.Store(survivor).ApplyKV(ctx, fsm.KVSetCommand(fsm.KVSetRequest{Key: []byte("e"), Value: []byte("v")})); err == nil || !storeapi.Unavailable(err) {
			break
		}
	}
	if err != nil {
		t.Fatalf("the cluster stopped with the node: %v", err)
	}
}
