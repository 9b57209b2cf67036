package raftstore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/idemgate/idemgate/internal/boltcheck"
	"github.com/idemgate/idemgate/internal/loopback"
)

// TB is what the test cluster needs of a test (testing.TB has it). The
// package does not import testing, so nothing of it reaches a binary that
// does not start a test cluster (the linker drops what is unused).
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	TempDir() string
	Cleanup(func())
}

// TestCluster is n real nodes in one process: real TCP on loopback, real
// raft-boltdb and bbolt files in a temporary directory. For tests and
// benchmarks of this and higher packages (as hashicorp/raft's MakeCluster).
type TestCluster struct {
	tb     TB
	Dir    string
	Stores []*Store // nil while a node is stopped; use Store(i) while nodes stop and start
	Cfgs   []Config
	mu     sync.Mutex // guards Stores against Stop/Start running beside readers
}

// stores is a copy of Stores, safe beside Stop and Start.
func (c *TestCluster) stores() []*Store {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Store(nil), c.Stores...)
}

// Store returns node i's store, or nil while it is stopped; safe beside
// Stop and Start.
func (c *TestCluster) Store(i int) *Store {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Stores[i]
}

// TestConfig is the config of node id of a test cluster: fast timeouts
// suited to loopback, quiet logs. A node among peers bootstraps with them
// (as every node of a new cluster started with --bootstrap); one that is
// not waits to be added, asking peers which cluster it joins.
func TestConfig(id, addr, dir string, peers []Peer) Config {
	c := DefaultConfig()
	c.NodeID, c.RaftBind, c.DataDir, c.Peers = id, addr, dir, peers
	for _, p := range peers {
		c.Bootstrap = c.Bootstrap || p.ID == id
	}
	c.HeartbeatTimeout = 400 * time.Millisecond
	c.ElectionTimeout = 400 * time.Millisecond
	c.LeaderLeaseTimeout = 200 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.ApplyTimeout = 5 * time.Second
	c.MinFreeBytes = 0 // the disk guard has its own test; shared machines can be short of space
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	// IDEMGATE_TEST_RAFT_LOG=debug (or info, warn, error) shows the nodes'
	// lines, Raft's included, on stderr.
	var level slog.Level
	if v := os.Getenv("IDEMGATE_TEST_RAFT_LOG"); v != "" && level.UnmarshalText([]byte(v)) == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	}
	return c
}

// StartTestCluster starts n nodes and waits for a leader. tweak, if not nil,
// adjusts each node's config before it starts. The cluster is closed when
// the test ends.
func StartTestCluster(tb TB, n int, tweak func(*Config)) *TestCluster {
	tb.Helper()
	c := NewTestCluster(tb, n, tweak)
	for i := range c.Cfgs {
		c.Start(i)
	}
	c.WaitLeader(10 * time.Second)
	c.WaitClusterID(10 * time.Second)
	return c
}

// NewTestCluster configures n nodes on free loopback ports without starting
// them (Start does); they bootstrap together. tweak, if not nil, adjusts
// each node's config. The cluster is closed when the test ends.
func NewTestCluster(tb TB, n int, tweak func(*Config)) *TestCluster {
	tb.Helper()
	c := &TestCluster{tb: tb, Dir: tb.TempDir()}
	addrs, err := loopback.FreeAddrs(n)
	if err != nil {
		tb.Fatal(err)
	}
	var peers []Peer
	for i, a := range addrs {
		peers = append(peers, Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: a})
	}
	for _, p := range peers {
		cfg := TestConfig(p.ID, p.RaftAddr, filepath.Join(c.Dir, p.ID), peers)
		if tweak != nil {
			tweak(&cfg)
		}
		c.Cfgs = append(c.Cfgs, cfg)
		c.Stores = append(c.Stores, nil)
	}
	tb.Cleanup(c.Close)
	return c
}

// WaitClusterID waits until every running node has applied the cluster id
// its first leader gave (a command of its own: tests comparing state
// hashes start after it).
func (c *TestCluster) WaitClusterID(timeout time.Duration) {
	c.tb.Helper()
	for deadline := time.Now().Add(timeout); ; {
		given := true
		for _, s := range c.stores() {
			if s != nil && s.FSM().ClusterID().IsZero() {
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

// JoinConfig is the config of a new node id at addr, to be added to the
// cluster: it knows the cluster's nodes and waits to be added.
func (c *TestCluster) JoinConfig(id, addr string) Config {
	return TestConfig(id, addr, filepath.Join(c.Dir, id), c.Cfgs[0].Peers)
}

// Start (re)starts node i from its files.
func (c *TestCluster) Start(i int) {
	c.tb.Helper()
	for attempt := 0; attempt < 50; attempt++ { // the port may linger briefly after a stop
		s, err := Open(c.Cfgs[i])
		if err == nil {
			c.mu.Lock()
			c.Stores[i] = s
			c.mu.Unlock()
			return
		}
		if attempt == 49 {
			c.tb.Fatalf("start %s: %v", c.Cfgs[i].NodeID, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop closes node i (its files stay).
func (c *TestCluster) Stop(i int) {
	c.tb.Helper()
	c.mu.Lock()
	s := c.Stores[i]
	c.Stores[i] = nil
	c.mu.Unlock()
	if s == nil {
		return
	}
	if err := s.Close(); err != nil {
		c.tb.Logf("stop %s: %v", c.Cfgs[i].NodeID, err)
	}
	// Every data file of a stopped node must pass bbolt's consistency check.
	for _, name := range []string{"fsm.db", "raft.db"} {
		if err := CheckBolt(filepath.Join(c.Cfgs[i].DataDir, name)); err != nil {
			c.tb.Errorf("%s after stopping %s: %v", name, c.Cfgs[i].NodeID, err)
		}
	}
}

// CheckBolt runs bbolt's consistency check (what `bbolt check` does) on a
// data file that no process has open, after the walk that keeps bbolt from
// crashing the test binary on a damaged one (package boltcheck).
func CheckBolt(path string) error {
	return boltcheck.Check(path, true)
}

// Close stops every node.
func (c *TestCluster) Close() {
	for i := range c.Stores {
		c.Stop(i)
	}
}

// WaitLeader waits until every running node agrees on one leader and
// returns its index.
func (c *TestCluster) WaitLeader(timeout time.Duration) int {
	c.tb.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		leader := -1
		agree := true
		stores := c.stores()
		for i, s := range stores {
			if s == nil {
				continue
			}
			id, _ := s.Leader()
			if id == "" {
				agree = false
				break
			}
			for j, cfg := range c.Cfgs {
				if cfg.NodeID == id {
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
		if agree && leader >= 0 && stores[leader] != nil && stores[leader].IsLeader() {
			return leader
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.tb.Fatalf("no agreed leader within %s", timeout)
	return -1
}

// WaitConverged waits until every running node has applied the same index
// and holds the same state hash.
func (c *TestCluster) WaitConverged(timeout time.Duration) {
	c.tb.Helper()
	if err := c.converge(timeout); err != nil {
		c.tb.Fatal(err)
	}
}

// converge waits until every running node has applied the same index and
// holds the same state hash, or reports why not.
func (c *TestCluster) converge(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last string
	for ctx.Err() == nil {
		var first [32]byte
		same, n := true, 0
		for _, s := range c.stores() {
			if s == nil {
				continue
			}
			if err := s.Barrier(ctx); err != nil {
				same = false
				last = err.Error()
				break
			}
			h, err := s.FSM().StateHash()
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
