package datadir

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/internal/boltcheck"
)

// The Raft log stores a node can keep its log and stable store (the term,
// the vote) in: the cluster file's raft.log_store. Each lives under its own
// name in the data directory, and a node opens only the one its setting
// names (OpenLog): the files on disk, not the setting, say where the log
// is, and `idemgate log migrate` moves it from one to the other.
const (
	// LogBolt is raft-boltdb/v2: log and stable store in one bbolt file,
	// raft.db. Every append is a B-tree commit: two fdatasyncs (pages,
	// then meta) and the page copies of a copy-on-write tree.
	LogBolt = "boltdb"
	// LogWAL is hashicorp/raft-wal: entries appended to preallocated
	// segment files with one fsync per append, and a small bbolt file
	// (written only when a segment rolls over or the log is truncated,
	// and on a vote) for the stable store, all in raft-wal/.
	LogWAL = "wal"
)

// DefaultLogStore is the store a new node keeps its log in when its
// raft.log_store is left out: raft-wal, chosen from the fault tests and
// the figures of docs/experiments/2026-12-06-log-store.md. A node whose
// data directory already holds a log keeps that log's store: an upgrade
// never stops a node for want of a migration.
const DefaultLogStore = LogWAL

// LogStores are the values raft.log_store takes.
var LogStores = []string{LogBolt, LogWAL}

// The names of the log stores' files in the data directory.
const (
	BoltLogFile = "raft.db"
	WALDir      = "raft-wal"
)

// LogStore is a node's Raft log and stable store, as Raft and the offline
// operations use it.
type LogStore interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

// ErrLogStoreMismatch: the data directory holds the Raft log in another
// store than the one asked for (or in both, a migration cut short).
var ErrLogStoreMismatch = errors.New("log store mismatch")

// LogPath is where the log store kind keeps its files in dir.
func LogPath(dir, kind string) string {
	if kind == LogWAL {
		return filepath.Join(dir, WALDir)
	}
	return filepath.Join(dir, BoltLogFile)
}

// FindLog says which log store's files dir holds: "" when neither (a new
// node, or a restore about to write one). Both at once is an error: only a
// migration cut short between its switch and its clean-up leaves that, and
// the migration, run again, finishes it.
func FindLog(dir string) (string, error) {
	var found []string
	for _, kind := range LogStores {
		_, err := os.Stat(LogPath(dir, kind))
		if err == nil {
			found = append(found, kind)
			continue
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("datadir: log store: %w", err)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%w: %s holds both %s and %s/ (a log migration stopped before it finished): with the node stopped, run `idemgate log migrate --to KIND` again (KIND its raft.log_store) to finish it",
		ErrLogStoreMismatch, dir, BoltLogFile, WALDir)
}

// OpenLog opens the node's Raft log in dir as the store kind (LogBolt or
// LogWAL), creating it when dir holds no log yet. An empty kind takes the
// store dir already holds, DefaultLogStore for a new one. A directory whose log is
// in the other store is refused with one line naming the setting and the
// migration: starting an empty log beside the real one would lose the
// node's entries and, worse, its vote.
func OpenLog(dir, kind string, noSync bool) (LogStore, error) {
	have, err := FindLog(dir)
	if err != nil {
		return nil, err
	}
	if kind == "" {
		kind = cmp.Or(have, DefaultLogStore)
	}
	if have != "" && have != kind {
		return nil, fmt.Errorf("%w: raft.log_store is %q, but %s holds this node's Raft log in %q: with the node stopped, run `idemgate log migrate --to %s` (serve's --config and --node), or set raft.log_store: %s",
			ErrLogStoreMismatch, kind, LogPath(dir, have), have, kind, have)
	}
	switch kind {
	case LogBolt:
		return OpenLogStore(LogPath(dir, kind), noSync)
	case LogWAL:
		return OpenWAL(LogPath(dir, kind), noSync)
	}
	return nil, fmt.Errorf("datadir: log store %q: want one of %v", kind, LogStores)
}

// OpenLogStore checks the Raft log's bbolt file (see package boltcheck:
// bbolt crashes the process on a damaged file, at every restart) and opens
// it. bbolt's consistency check runs on files up to
// boltcheck.FullCheckMaxBytes; the log is fsynced, so an unclean stop does
// not call for it. Unlike fsm.db, the log cannot be rebuilt on this node:
// it holds entries and votes the cluster counted on, so the node refuses
// to start and the fix is a new copy from the leader.
//
// The check reads the whole file in order first, so bbolt's open finds it
// in the page cache when it rebuilds the free list. The free list is not
// written at a clean close, as fsm.db's is: raft-boltdb keeps its bbolt
// handle to itself, and BenchmarkLogStoreColdOpen found no time to save.
func OpenLogStore(path string, noSync bool) (logs *raftboltdb.BoltStore, err error) {
	if err := checkBolt(path); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			logs, err = nil, logStoreDamaged(path, &boltcheck.Damage{Problem: fmt.Sprintf("bbolt panicked opening it: %v", r)})
		}
	}()
	logs, err = raftboltdb.New(raftboltdb.Options{
		Path:        path,
		BoltOptions: &bolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType},
		NoSync:      noSync,
	})
	if err != nil {
		return nil, fmt.Errorf("datadir: log store: %w", err)
	}
	return logs, nil
}

// checkBolt checks the bbolt file at path, if there is one, before bbolt
// opens it.
func checkBolt(path string) error {
	st, statErr := os.Stat(path)
	if statErr != nil {
		return nil
	}
	err := boltcheck.Check(path, st.Size() <= boltcheck.FullCheckMaxBytes)
	var d *boltcheck.Damage
	if errors.As(err, &d) {
		return logStoreDamaged(path, d)
	}
	if err != nil {
		return fmt.Errorf("datadir: check %s: %w", path, err)
	}
	return nil
}

func logStoreDamaged(path string, d *boltcheck.Damage) error {
	return fmt.Errorf("%s is damaged: %w; remove this node's data dir and re-add the node to the cluster (it gets a full copy from the leader)", path, d)
}
