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

// TestStoreConfigTiming: raft.timing picks the heartbeat and election
// timeouts (the leader's lease half the heartbeat), each overridden by the
// file's own field; a file whose election timeout would end up shorter
// than its heartbeat timeout is refused naming both fields, as Raft would
// refuse it at start.
func TestStoreConfigTiming(t *testing.T) {
	def := raftstore.DefaultConfig()
	for _, tc := range []struct {
		raft                string
		heartbeat, election time.Duration
		wantErr             string
	}{
		{"{}", def.HeartbeatTimeout, def.ElectionTimeout, ""},
		{"{timing: default}", def.HeartbeatTimeout, def.ElectionTimeout, ""},
		{"{timing: lan}", raftstore.LANHeartbeatTimeout, raftstore.LANElectionTimeout, ""},
		{"{timing: lan, election_timeout: 2s}", raftstore.LANHeartbeatTimeout, 2 * time.Second, ""},
		{"{timing: lan, heartbeat_timeout: 100ms, election_timeout: 100ms}", 100 * time.Millisecond, 100 * time.Millisecond, ""},
		{"{timing: lan, heartbeat_timeout: 1s}", 0, 0, "raft.election_timeout 300ms is shorter than raft.heartbeat_timeout 1s (raft.timing lan sets"},
		{"{heartbeat_timeout: 3s}", 0, 0, "raft.election_timeout 1s is shorter than raft.heartbeat_timeout 3s (raft.timing default sets"},
	} {
		f, err := config.Parse([]byte("nodes: [{id: n1, raft: '127.0.0.1:1', api: '127.0.0.1:2'}]\nraft: " + tc.raft + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", tc.raft, err)
		}
		rc, err := StoreConfig(Settings{File: f, Node: f.Nodes[0], DataDir: t.TempDir()})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("raft: %s: StoreConfig = %v, want an error containing %q", tc.raft, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("raft: %s: %v", tc.raft, err)
		}
		if rc.HeartbeatTimeout != tc.heartbeat || rc.ElectionTimeout != tc.election || rc.LeaderLeaseTimeout != tc.heartbeat/2 {
			t.Errorf("raft: %s: heartbeat %s, election %s, lease %s; want %s, %s, %s", tc.raft, rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout,
				tc.heartbeat, tc.election, tc.heartbeat/2)
		}
		if err := rc.Validate(); err != nil {
			t.Errorf("raft: %s: Validate: %v", tc.raft, err)
		}
	}
}
