package node

import (
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/raftstore"
)

// TestStoreConfig: the store's config is the node's identity and data
// directory, every node of the file as a peer (at the address the others
// dial), raftstore's defaults where the file is silent and the file's
// settings where it is not; what only the listeners know is left to Start.
// A file serve would refuse is refused here too, naming the field, so the
// offline commands that share it refuse it the same way.
func TestStoreConfig(t *testing.T) {
	f, err := config.Parse([]byte(`nodes:
  - {id: n1, raft: '127.0.0.1:1', api: '127.0.0.1:2'}
  - {id: n2, raft: '0.0.0.0:3', advertise_raft: '10.0.0.2:3', api: '127.0.0.1:4'}
raft: {election_timeout: 3s, snapshot_threshold: 100, min_free: 1MiB, fsm_fsync: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := StoreConfig(Settings{File: f, Node: f.Nodes[1], DataDir: "/data/n2", Bootstrap: true})
	if err != nil {
		t.Fatal(err)
	}
	def := raftstore.DefaultConfig()
	wantPeers := []raftstore.Peer{{ID: "n1", RaftAddr: "127.0.0.1:1"}, {ID: "n2", RaftAddr: "10.0.0.2:3"}}
	switch {
	case rc.NodeID != "n2" || rc.RaftBind != "0.0.0.0:3" || rc.RaftAdvertise != "10.0.0.2:3" || rc.DataDir != "/data/n2" || !rc.Bootstrap:
		t.Fatalf("identity = %q %q %q %q bootstrap %v", rc.NodeID, rc.RaftBind, rc.RaftAdvertise, rc.DataDir, rc.Bootstrap)
	case len(rc.Peers) != 2 || rc.Peers[0] != wantPeers[0] || rc.Peers[1] != wantPeers[1]:
		t.Fatalf("peers = %+v, want %+v", rc.Peers, wantPeers)
	case rc.ElectionTimeout != 3*time.Second || rc.SnapshotThreshold != 100 || rc.MinFreeBytes != 1<<20 || rc.FSMNoSync:
		t.Fatalf("the file's settings = %v %d %d fsm-nosync %v", rc.ElectionTimeout, rc.SnapshotThreshold, rc.MinFreeBytes, rc.FSMNoSync)
	case rc.HeartbeatTimeout != def.HeartbeatTimeout || rc.ApplyTimeout != def.ApplyTimeout || rc.SnapshotInterval != def.SnapshotInterval:
		t.Fatalf("what the file leaves out = %v %v %v, want raftstore's defaults", rc.HeartbeatTimeout, rc.ApplyTimeout, rc.SnapshotInterval)
	case rc.MaxCommandBytes != def.MaxCommandBytes || rc.Logger != nil:
		t.Fatalf("StoreConfig set what Start decides: MaxCommandBytes %d, logger %v", rc.MaxCommandBytes, rc.Logger)
	}
	if err := rc.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}

	bad, err := config.Parse([]byte("nodes: [{id: n1, raft: '127.0.0.1:1', api: '127.0.0.1:2'}]\nexpiry: {backlog_pause: 2s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := StoreConfig(Settings{File: bad, Node: bad.Nodes[0], DataDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "expiry.backlog_pause") {
		t.Fatalf("a file serve refuses: StoreConfig = %v, want an error naming expiry.backlog_pause", err)
	}
}
