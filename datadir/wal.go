package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// OpenWAL opens the Raft log kept by hashicorp/raft-wal in dir (created
// 0700 when missing), as OpenLogStore opens raft.db: its bbolt file
// (wal-meta.db: the stable store and the list of segments) is checked
// first, and a panic while opening is a damaged store, not a crash.
//
// A crash leaves at most a torn tail: the last segment's frames after its
// last intact commit frame (raft-wal checks the batch's CRC when it
// reopens, and drops a batch that does not add up). Those entries were
// never acknowledged, since an append returns once its fsync has; the
// leader sends them again. TestWALTornTail cuts the tail at every byte of
// its last records and reopens.
//
// noSync skips the segments' fsyncs (raftstore.Config.LogNoSync: UNSAFE,
// for benchmarks only).
func OpenWAL(dir string, noSync bool) (_ LogStore, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("datadir: log store: %w", err)
	}
	meta := filepath.Join(dir, metadb.FileName)
	if err := checkBolt(meta); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s is damaged: raft-wal panicked opening it: %v; remove this node's data dir and re-add the node to the cluster (it gets a full copy from the leader)", dir, r)
		}
	}()
	logs, err := wal.Open(dir,
		wal.WithSegmentFiler(segment.NewFiler(dir, privateVFS{VFS: walfs.New(), noSync: noSync})),
		wal.WithLogger(hclog.NewNullLogger()))
	if err != nil {
		return nil, fmt.Errorf("datadir: log store %s: %w", dir, err)
	}
	w := walLog{logs}
	// raft-wal creates its meta file 0644; the directory is the node's own.
	if err := os.Chmod(meta, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
		w.Close()
		return nil, fmt.Errorf("datadir: log store: %w", err)
	}
	return w, nil
}

// walLog is raft-wal's log, its appends timed.
type walLog struct{ *wal.WAL }

// StoreLogs appends logs, timed as raft-boltdb times its own
// ("raft.wal.storeLogs" beside "raft.boltdb.storeLogs"), so the bench's
// budget counts either store's commits.
func (w walLog) StoreLogs(logs []*raft.Log) error {
	defer metrics.MeasureSince([]string{"raft", "wal", "storeLogs"}, time.Now())
	return w.WAL.StoreLogs(logs)
}

func (w walLog) StoreLog(log *raft.Log) error { return w.StoreLogs([]*raft.Log{log}) }

// privateVFS is raft-wal's file system with its segments 0600 (it creates
// them 0644) and, with noSync, their fsyncs skipped.
type privateVFS struct {
	types.VFS
	noSync bool
}

func (v privateVFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	f, err := v.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(filepath.Join(dir, name), 0o600); err != nil {
		f.Close()
		return nil, err
	}
	return v.wrap(f), nil
}

func (v privateVFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	f, err := v.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return v.wrap(f), nil
}

func (v privateVFS) wrap(f types.WritableFile) types.WritableFile {
	if v.noSync {
		return noSyncFile{f}
	}
	return f
}

// noSyncFile is a segment whose fsyncs are skipped. UNSAFE.
type noSyncFile struct{ types.WritableFile }

func (noSyncFile) Sync() error { return nil }
