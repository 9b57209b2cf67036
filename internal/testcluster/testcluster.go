// Package testcluster starts clusters of raftstore nodes for the tests of
// the packages above raftstore: real Raft over loopback TCP, real bbolt
// files in the test's temporary directory, fast timeouts, quiet logs
// (package localcluster does the work). Only tests import it.
package testcluster

import (
	"github.com/idemgate/idemgate/internal/localcluster"
	"github.com/idemgate/idemgate/raftstore"
)

// Cluster is n raftstore nodes in one process.
type Cluster = localcluster.Cluster[raftstore.Config, *raftstore.Store]

// TB is what a cluster needs of a test (testing.TB has it).
type TB = localcluster.TB

var spec = localcluster.Spec[raftstore.Config, *raftstore.Store]{
	Config: func(id, addr, dir string, members []localcluster.Member) raftstore.Config {
		var peers []raftstore.Peer
		for _, m := range members {
			peers = append(peers, raftstore.Peer{ID: m.ID, RaftAddr: m.Addr})
		}
		return Config(id, addr, dir, peers)
	},
	Open:    raftstore.Open,
	ID:      func(c raftstore.Config) string { return c.NodeID },
	DataDir: func(c raftstore.Config) string { return c.DataDir },
}

// Start starts n nodes and waits for a leader and for every node to apply
// the cluster id. tweak, if not nil, adjusts each node's config before it
// starts. The cluster is closed when the test ends.
func Start(tb TB, n int, tweak func(*raftstore.Config)) *Cluster {
	tb.Helper()
	return localcluster.Start(tb, spec, n, tweak)
}

// Config is the config of node id of a test cluster: fast timeouts suited
// to loopback, quiet logs. A node among peers bootstraps with them (as
// every node of a new cluster started with --bootstrap); one that is not
// waits to be added, asking peers which cluster it joins.
func Config(id, addr, dir string, peers []raftstore.Peer) raftstore.Config {
	c := raftstore.DefaultConfig()
	c.NodeID, c.RaftBind, c.DataDir, c.Peers = id, addr, dir, peers
	for _, p := range peers {
		c.Bootstrap = c.Bootstrap || p.ID == id
	}
	localcluster.Tune(&c.HeartbeatTimeout, &c.ElectionTimeout, &c.LeaderLeaseTimeout, &c.CommitTimeout, &c.ApplyTimeout)
	c.MinFreeBytes = 0 // the disk guard has its own test; shared machines can be short of space
	c.Logger = localcluster.Logger()
	return c
}
