package raftstore

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// A node's data directory holds every stored response body and unspent
// token in plaintext: it is the node's own (0700), its files 0600.
// hashicorp/raft writes snapshots with the process umask (0644 files, 0755
// directories), so finished snapshots are tightened as well.

// privateDir creates dir, or tightens it, to mode 0700.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("raftstore: data dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("raftstore: data dir: %w", err)
	}
	return nil
}

// privateSnapshots is a snapshot store whose snapshots are 0700/0600.
type privateSnapshots struct {
	raft.SnapshotStore
	dir string // the snapshot store's parent directory
}

func (p privateSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := p.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return privateSink{SnapshotSink: sink, dir: filepath.Join(p.dir, "snapshots", sink.ID())}, nil
}

type privateSink struct {
	raft.SnapshotSink
	dir string
}

func (s privateSink) Close() error {
	if err := s.SnapshotSink.Close(); err != nil {
		return err
	}
	os.Chmod(filepath.Dir(s.dir), 0o700)
	os.Chmod(s.dir, 0o700)
	entries, _ := os.ReadDir(s.dir)
	for _, e := range entries {
		os.Chmod(filepath.Join(s.dir, e.Name()), 0o600)
	}
	return nil
}
