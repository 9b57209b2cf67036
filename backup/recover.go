package backup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/datadir"
	"github.com/idemgate/idemgate/fsm"
)

// RecoverInfo is what Recover did.
type RecoverInfo struct {
	// Applied is the last index the node's state machine holds: the
	// recovered cluster starts from it.
	Applied uint64
}

// Recover rewrites a stopped node's Raft state so that its configuration
// is voters, whatever it was: the way out when a quorum is lost for good
// (hashicorp/raft's RecoverCluster, as Consul's peers.json recovery). Run
// it on every surviving node, with the same voters, while each is stopped;
// then start them. It is the last resort: writes that only the lost nodes
// held are gone, and two groups recovered apart would be two clusters.
//
// cfg is the node's own; voters must include it. The data directory's lock
// keeps Recover from running beside the node. Run as root, it leaves the
// directory's files to the directory's owner.
//
// It is not Restore: Restore makes a new cluster from a backup file;
// Recover keeps a node's own state and only rewrites who its voters are.
func Recover(cfg Config, voters []Voter) (_ RecoverInfo, err error) {
	if err := cfg.Validate(); err != nil {
		return RecoverInfo{}, err
	}
	uid, gid, err := datadir.Owner(cfg.DataDir)
	if err != nil {
		return RecoverInfo{}, err
	}
	defer func() { // last, once every file is closed
		if err == nil {
			err = datadir.KeepOwner(cfg.DataDir, uid, gid)
		}
	}()
	if len(voters) == 0 {
		return RecoverInfo{}, errors.New("backup: recover: no voters")
	}
	conf, err := configuration(voters)
	if err != nil {
		return RecoverInfo{}, err
	}
	if !slices.ContainsFunc(voters, func(v Voter) bool { return v.ID == cfg.NodeID }) {
		return RecoverInfo{}, fmt.Errorf("backup: recover: the voters must include this node %q", cfg.NodeID)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "fsm.db")); err != nil {
		return RecoverInfo{}, fmt.Errorf("backup: recover: %s holds no node's data: %w", cfg.DataDir, err)
	}
	// A log in the other store is refused by OpenLog, naming the fix.
	if kind, err := datadir.FindLog(cfg.DataDir); err == nil && kind == "" {
		return RecoverInfo{}, fmt.Errorf("backup: recover: %s holds no node's data: no Raft log (%s or %s/)", cfg.DataDir, datadir.BoltLogFile, datadir.WALDir)
	}
	unlock, err := datadir.Lock(cfg.DataDir)
	if err != nil {
		return RecoverInfo{}, err
	}
	defer unlock()

	f, err := cfg.openFSM()
	if err != nil {
		return RecoverInfo{}, err
	}
	defer f.Close()
	logs, err := datadir.OpenLog(cfg.DataDir, cfg.LogStore, false)
	if err != nil {
		return RecoverInfo{}, err
	}
	defer logs.Close()
	hlog := hclog.NewNullLogger()
	snaps, err := datadir.SnapshotStore(cfg.DataDir, hlog)
	if err != nil {
		return RecoverInfo{}, err
	}
	_, trans := inmemTransport()
	defer trans.Close()
	// RecoverCluster only checks its config (ValidateConfig) and takes
	// the snapshot format (ProtocolVersion) and the logger from it: the
	// running node's timeouts and thresholds play no part.
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.Logger = hlog
	if err := raft.RecoverCluster(rc, releasingFSM{f}, logs, logs, snaps, trans, conf); err != nil {
		return RecoverInfo{}, fmt.Errorf("backup: recover: %w", err)
	}
	return RecoverInfo{Applied: f.AppliedIndex()}, nil
}

// releasingFSM is the state machine as RecoverCluster gets it. Recover-
// Cluster persists a snapshot but never releases it; ours holds a bbolt
// read transaction, and closing the file would wait for it for ever.
type releasingFSM struct{ *fsm.FSM }

func (r releasingFSM) Snapshot() (raft.FSMSnapshot, error) {
	s, err := r.FSM.Snapshot()
	if err != nil {
		return nil, err
	}
	return releaseAfterPersist{s}, nil
}

type releaseAfterPersist struct{ raft.FSMSnapshot }

func (s releaseAfterPersist) Persist(sink raft.SnapshotSink) error {
	defer s.Release()
	return s.FSMSnapshot.Persist(sink)
}
