package raftstore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

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
// cfg is the node's own (NodeID, DataDir, FSMNoSync); voters must include
// it. The data directory's lock keeps Recover from running beside the node.
// Run as root, it leaves the directory's files to the directory's owner.
func Recover(cfg Config, voters []Peer) (_ RecoverInfo, err error) {
	if err := cfg.Validate(); err != nil {
		return RecoverInfo{}, err
	}
	uid, gid, err := dirOwner(cfg.DataDir)
	if err != nil {
		return RecoverInfo{}, err
	}
	defer func() { // last, once every file is closed
		if err == nil {
			err = keepOwner(cfg.DataDir, uid, gid)
		}
	}()
	if len(voters) == 0 {
		return RecoverInfo{}, errors.New("raftstore: recover: no voters")
	}
	var conf raft.Configuration
	self := false
	for _, v := range voters {
		self = self || v.ID == cfg.NodeID
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(v.ID), Address: raft.ServerAddress(v.RaftAddr), Suffrage: raft.Voter})
	}
	if !self {
		return RecoverInfo{}, fmt.Errorf("raftstore: recover: the voters must include this node %q", cfg.NodeID)
	}
	for _, name := range []string{"raft.db", "fsm.db"} {
		if _, err := os.Stat(filepath.Join(cfg.DataDir, name)); err != nil {
			return RecoverInfo{}, fmt.Errorf("raftstore: recover: %s holds no node's data: %w", cfg.DataDir, err)
		}
	}
	unlock, err := lockDir(cfg.DataDir)
	if err != nil {
		return RecoverInfo{}, err
	}
	defer unlock()

	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	f, err := fsm.Open(fsm.Config{Path: filepath.Join(cfg.DataDir, "fsm.db"), NoSync: cfg.FSMNoSync, Logger: logger})
	if err != nil {
		return RecoverInfo{}, err
	}
	defer f.Close()
	logs, err := openLogStore(filepath.Join(cfg.DataDir, "raft.db"), false)
	if err != nil {
		return RecoverInfo{}, err
	}
	defer logs.Close()
	hlog := hclog.NewNullLogger()
	store, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, hlog)
	if err != nil {
		return RecoverInfo{}, fmt.Errorf("raftstore: recover: snapshot store: %w", err)
	}
	snaps := privateSnapshots{SnapshotStore: store, dir: cfg.DataDir}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(cfg.advertise())) // encodes peers' addresses into the snapshot's metadata; nothing is sent
	defer trans.Close()
	rc := cfg.raftConfig()
	rc.Logger = hlog
	if err := raft.RecoverCluster(rc, releasingFSM{f}, logs, logs, snaps, trans, conf); err != nil {
		return RecoverInfo{}, fmt.Errorf("raftstore: recover: %w", err)
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
