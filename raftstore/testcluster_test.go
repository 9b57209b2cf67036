package raftstore

import (
	"os"
	"testing"

	"github.com/idemgate/idemgate/internal/localcluster"
)

// TestCluster is n real nodes of this package in one process (package
// localcluster). The tests of the packages above have the same through
// internal/testcluster, which this package's tests cannot import.
type TestCluster = localcluster.Cluster[Config, *Store]

// testSpec opens this package's nodes with testConfig.
var testSpec = localcluster.Spec[Config, *Store]{
	Config: func(id, addr, dir string, members []localcluster.Member) Config {
		var peers []Peer
		for _, m := range members {
			peers = append(peers, Peer{ID: m.ID, RaftAddr: m.Addr})
		}
		return testConfig(id, addr, dir, peers)
	},
	Open:    Open,
	ID:      func(c Config) string { return c.NodeID },
	DataDir: func(c Config) string { return c.DataDir },
}

// StartTestCluster starts n nodes and waits for a leader; tweak, if not
// nil, adjusts each node's config.
func StartTestCluster(tb testing.TB, n int, tweak func(*Config)) *TestCluster {
	tb.Helper()
	return localcluster.Start(tb, testSpec, n, tweak)
}

// NewTestCluster configures n nodes without starting them.
func NewTestCluster(tb testing.TB, n int, tweak func(*Config)) *TestCluster {
	tb.Helper()
	return localcluster.New(tb, testSpec, n, tweak)
}

// testConfig is the config of node id of a test cluster (see
// localcluster.Tune).
func testConfig(id, addr, dir string, peers []Peer) Config {
	c := DefaultConfig()
	c.NodeID, c.RaftBind, c.DataDir, c.Peers = id, addr, dir, peers
	for _, p := range peers {
		c.Bootstrap = c.Bootstrap || p.ID == id
	}
	localcluster.Tune(&c.HeartbeatTimeout, &c.ElectionTimeout, &c.LeaderLeaseTimeout, &c.CommitTimeout, &c.ApplyTimeout)
	c.MinFreeBytes = 0 // the disk guard has its own test; shared machines can be short of space
	if kind := os.Getenv("IDEMGATE_TEST_LOG_STORE"); kind != "" {
		c.LogStore = kind // the whole suite on one log store: boltdb or wal
	}
	c.Logger = localcluster.Logger()
	return c
}
