package node

import (
	"fmt"

	"github.com/idemgate/idemgate/raftstore"
)

// StoreConfig is the store's config for the node s names: raftstore's
// defaults, and what the cluster file sets (each default is defined once,
// by the package that owns it). serve (Start) and the offline commands
// (snapshot restore, recover, compact) both build it here, so they find a
// node's data directory, its peers and its settings the same way. Start
// adds what the node's listeners decide (MaxCommandBytes) and its logger.
func StoreConfig(s Settings) (raftstore.Config, error) {
	file, cn := s.File, s.Node
	rc := raftstore.DefaultConfig()
	rc.NodeID, rc.RaftBind, rc.DataDir = cn.ID, cn.Raft, s.DataDir
	for _, n := range file.Nodes {
		rc.Peers = append(rc.Peers, raftstore.Peer{ID: n.ID, RaftAddr: n.RaftAddr()})
	}
	rc.Bootstrap = s.Bootstrap
	rc.RaftAdvertise = cn.AdvertiseRaft
	r := file.Raft
	if r.Timing == "lan" {
		rc.HeartbeatTimeout, rc.ElectionTimeout = raftstore.LANHeartbeatTimeout, raftstore.LANElectionTimeout
	}
	setDuration(&rc.HeartbeatTimeout, r.HeartbeatTimeout)
	setDuration(&rc.ElectionTimeout, r.ElectionTimeout)
	if rc.ElectionTimeout < rc.HeartbeatTimeout {
		// A file that sets one and takes the other from raft.timing.
		timing := r.Timing
		if timing == "" {
			timing = "default"
		}
		return raftstore.Config{}, fmt.Errorf("config: raft.election_timeout %s is shorter than raft.heartbeat_timeout %s (raft.timing %s sets what the file leaves out): Raft refuses it; set both",
			rc.ElectionTimeout, rc.HeartbeatTimeout, timing)
	}
	rc.LeaderLeaseTimeout = rc.HeartbeatTimeout / 2
	if r.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = r.SnapshotThreshold
	}
	setDuration(&rc.SnapshotInterval, r.SnapshotInterval)
	setDuration(&rc.ApplyTimeout, r.ApplyTimeout)
	setDuration(&rc.MaxClockJump, r.MaxClockJump)
	if r.MinFree > 0 {
		rc.MinFreeBytes = uint64(r.MinFree)
	}
	rc.FSMNoSync = !r.FSMFsync
	if r.LogStore != "" {
		rc.LogStore = r.LogStore
	}
	setInt(&rc.ApplyCommitEvery, r.ApplyCommitEvery)
	setDuration(&rc.ApplyCommitInterval, r.ApplyCommitInterval)
	var err error
	if rc.Sweeper, err = sweeperConfig(file); err != nil {
		return raftstore.Config{}, err
	}
	rc.PeerTLS = s.PeerTLS
	return rc, nil
}
