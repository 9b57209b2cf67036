package raftstore

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/idemgate/idemgate/fsm"
)

// CompactInfo is what Compact did: fsm.db's size before and after.
type CompactInfo struct {
	Before, After int64
}

// Compact rewrites a stopped node's state machine file to hold only its
// live data (fsm.Compact), as etcd's defrag does: after a mass expiry the
// file keeps its largest size until then. The data directory's lock keeps
// it from running beside the node; the file is opened and closed first, so
// a file left by a crash is checked (and repaired from the node's snapshot
// and log at the next start, as always) before it is rewritten. Run as
// root, it leaves the file to the directory's owner.
func Compact(cfg Config) (CompactInfo, error) {
	if cfg.DataDir == "" {
		return CompactInfo{}, fmt.Errorf("raftstore: compact: DataDir is empty")
	}
	uid, gid, err := dirOwner(cfg.DataDir)
	if err != nil {
		return CompactInfo{}, err
	}
	unlock, err := lockDir(cfg.DataDir)
	if err != nil {
		return CompactInfo{}, err
	}
	defer unlock()
	path := filepath.Join(cfg.DataDir, "fsm.db")
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	f, err := fsm.Open(fsm.Config{Path: path, NoSync: cfg.FSMNoSync, Logger: logger})
	if err != nil {
		return CompactInfo{}, fmt.Errorf("raftstore: compact: %w", err)
	}
	if err := f.Close(); err != nil {
		return CompactInfo{}, fmt.Errorf("raftstore: compact: %w", err)
	}
	before, after, err := fsm.Compact(path)
	if err != nil {
		return CompactInfo{}, err
	}
	return CompactInfo{Before: before, After: after}, keepOwner(cfg.DataDir, uid, gid)
}
