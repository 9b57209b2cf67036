package datadir

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// A node's data directory holds every stored response body and unspent
// token in plaintext: it is the node's own (0700), its files 0600.
// hashicorp/raft writes snapshots with the process umask (0644 files, 0755
// directories), so finished snapshots are tightened as well.

// Private creates dir, or tightens it, to mode 0700.
func Private(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("datadir: data dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("datadir: data dir: %w", err)
	}
	return nil
}

// retainSnapshots is how many snapshots the store keeps; older ones are
// removed when a new one is written.
const retainSnapshots = 2

// SnapshotStore is the node's Raft snapshot store, in dir/snapshots: its
// snapshots are 0700/0600, and each is written out to disk as it is
// written (snapsync.go).
func SnapshotStore(dir string, logger hclog.Logger) (raft.SnapshotStore, error) {
	store, err := raft.NewFileSnapshotStoreWithLogger(dir, retainSnapshots, logger)
	if err != nil {
		return nil, fmt.Errorf("datadir: snapshot store: %w", err)
	}
	return privateSnapshots{SnapshotStore: store, dir: dir}, nil
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
	dir := filepath.Join(p.dir, "snapshots", sink.ID())
	return privateSink{SnapshotSink: newSyncingSink(sink, dir+".tmp"), dir: dir}, nil
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
