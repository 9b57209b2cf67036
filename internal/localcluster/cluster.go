package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/internal/boltcheck"
	"github.com/idemgate/idemgate/internal/loopback"
)

// TB is what the cluster needs of a test (testing.TB has it).
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	TempDir() string
	Cleanup(func())
}

// Node is what the cluster needs of a running node (raftstore's *Store).
type Node interface {
	comparable
	NodeID() string
	Leader() (id, addr string)
	IsLeader() bool
	Barrier(ctx context.Context) error
	FSM() *fsm.FSM
	Close() error
}

// Member is a node of the cluster as its bootstrap configuration names it.
type Member struct{ ID, Addr string }

// Spec says how to configure and open a node of config type C.
type Spec[C any, N Node] struct {
	// Config is the config of node id listening on addr with its files in
	// dir; a node among peers bootstraps with them, one that is not waits
	// to be added.
	Config func(id, addr, dir string, peers []Member) C
	// Open starts a node from its config.
	Open func(C) (N, error)
	// ID and DataDir read a config's node id and the directory of its files.
	ID, DataDir func(C) string
}

// Cluster is n real nodes in one process: real TCP on loopback, real files
// in a temporary directory (as hashicorp/raft's MakeCluster).
type Cluster[C any, N Node] struct {
	tb      TB
	spec    Spec[C, N]
	members []Member
	Dir     string
	Stores  []N // the zero N while a node is stopped; use Store(i) while nodes stop and start
	Cfgs    []C
	mu      sync.Mutex // guards Stores against Stop/Start running beside readers
}

// New configures n nodes on free loopback ports without starting them
// (Start does); they bootstrap together. tweak, if not nil, adjusts each
// node's config. The cluster is closed when the test ends.
func New[C any, N Node](tb TB, spec Spec[C, N], n int, tweak func(*C)) *Cluster[C, N] {
	tb.Helper()
	c := &Cluster[C, N]{tb: tb, spec: spec, Dir: tb.TempDir()}
	addrs, err := loopback.FreeAddrs(n)
	if err != nil {
		tb.Fatal(err)
	}
	for i, a := range addrs {
		c.members = append(c.members, Member{ID: fmt.Sprintf("n%d", i+1), Addr: a})
	}
	for _, m := range c.members {
		cfg := spec.Config(m.ID, m.Addr, filepath.Join(c.Dir, m.ID), c.members)
		if tweak != nil {
			tweak(&cfg)
		}
		c.Cfgs = append(c.Cfgs, cfg)
		var none N
		c.Stores = append(c.Stores, none)
	}
	tb.Cleanup(c.Close)
	return c
}

// Start starts n nodes and waits for a leader and for every node to apply
// the cluster id. tweak, if not nil, adjusts each node's config before it
// starts. The cluster is closed when the test ends.
func Start[C any, N Node](tb TB, spec Spec[C, N], n int, tweak func(*C)) *Cluster[C, N] {
	tb.Helper()
	c := New(tb, spec, n, tweak)
	for i := range c.Cfgs {
		c.Start(i)
	}
	c.WaitLeader(10 * time.Second)
	c.WaitClusterID(10 * time.Second)
	return c
}

// Running returns the running nodes, index by index (the zero N for a
// stopped one): a copy, safe beside Stop and Start.
func (c *Cluster[C, N]) Running() []N {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]N(nil), c.Stores...)
}

// Store returns node i's store, or the zero N while it is stopped; safe
// beside Stop and Start.
func (c *Cluster[C, N]) Store(i int) N {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Stores[i]
}

// JoinConfig is the config of a new node id at addr, to be added to the
// cluster: it knows the cluster's nodes and waits to be added.
func (c *Cluster[C, N]) JoinConfig(id, addr string) C {
	return c.spec.Config(id, addr, filepath.Join(c.Dir, id), c.members)
}

// WaitClusterID waits until every running node has applied the cluster id
// its first leader gave (a command of its own: tests comparing state
// hashes start after it).
func (c *Cluster[C, N]) WaitClusterID(timeout time.Duration) {
	c.tb.Helper()
	var none N
	for deadline := time.Now().Add(timeout); ; {
		given := true
		for _, s := range c.Running() {
			if s != none && s.FSM().ClusterID().IsZero() {
				given = false
			}
		}
		if given {
			return
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("no cluster id applied on every node within %s", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Start (re)starts node i from its files.
func (c *Cluster[C, N]) Start(i int) {
	c.tb.Helper()
	for attempt := 0; attempt < 50; attempt++ { // the port may linger briefly after a stop
		s, err := c.spec.Open(c.Cfgs[i])
		if err == nil {
			c.mu.Lock()
			c.Stores[i] = s
			c.mu.Unlock()
			return
		}
		if attempt == 49 {
			c.tb.Fatalf("start %s: %v", c.spec.ID(c.Cfgs[i]), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop closes node i (its files stay) and checks its data files.
func (c *Cluster[C, N]) Stop(i int) {
	c.tb.Helper()
	var none N
	c.mu.Lock()
	s := c.Stores[i]
	c.Stores[i] = none
	c.mu.Unlock()
	if s == none {
		return
	}
	id := c.spec.ID(c.Cfgs[i])
	if err := s.Close(); err != nil {
		c.tb.Logf("stop %s: %v", id, err)
	}
	// Every data file of a stopped node must pass bbolt's consistency check
	// (the log's: raft.db, or raft-wal's meta file, whichever it keeps).
	for _, name := range []string{"fsm.db", "raft.db", "raft-wal/wal-meta.db"} {
		path := filepath.Join(c.spec.DataDir(c.Cfgs[i]), name)
		if _, err := os.Stat(path); err != nil && name != "fsm.db" {
			continue
		}
		if err := boltcheck.Check(path, true); err != nil {
			c.tb.Errorf("%s after stopping %s: %v", name, id, err)
		}
	}
}

// Close stops every node.
func (c *Cluster[C, N]) Close() {
	for i := range c.Stores {
		c.Stop(i)
	}
}

// WaitLeader waits until every running node agrees on one leader and
// returns its index.
func (c *Cluster[C, N]) WaitLeader(timeout time.Duration) int {
	c.tb.Helper()
	var none N
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		leader := -1
		agree := true
		stores := c.Running()
		for i, s := range stores {
			if s == none {
				continue
			}
			id, _ := s.Leader()
			if id == "" {
				agree = false
				break
			}
			for j, cfg := range c.Cfgs {
				if c.spec.ID(cfg) == id {
					if leader != -1 && leader != j {
						agree = false
					}
					leader = j
				}
			}
			if s.IsLeader() && leader != i {
				agree = false
			}
		}
		if agree && leader >= 0 && stores[leader] != none && stores[leader].IsLeader() {
			return leader
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.tb.Fatalf("no agreed leader within %s", timeout)
	return -1
}

// WaitConverged waits until every running node has applied the same index
// and holds the same state hash.
func (c *Cluster[C, N]) WaitConverged(timeout time.Duration) {
	c.tb.Helper()
	if err := c.Converge(timeout); err != nil {
		c.tb.Fatal(err)
	}
}

// Converge waits until every running node has applied the same index and
// holds the same state hash, or reports why not.
func (c *Cluster[C, N]) Converge(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var none N
	var last string
	for ctx.Err() == nil {
		var first [32]byte
		same, n := true, 0
		for _, s := range c.Running() {
			if s == none {
				continue
			}
			if err := s.Barrier(ctx); err != nil {
				same = false
				last = err.Error()
				break
			}
			h, err := StateHash(s.FSM())
			if err != nil {
				return err
			}
			if n > 0 && h != first {
				same = false
				last = fmt.Sprintf("%s differs", s.NodeID())
			}
			first = h
			n++
		}
		if same {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("replicas did not converge within %s: %s", timeout, last)
}
