package raftstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/internal/boltcheck"
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

// dirOwner is the owner of dir, or of its nearest existing parent when dir
// does not exist yet (the directory a restore creates belongs to whoever
// owns where it goes).
func dirOwner(dir string) (uid, gid int, err error) {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err == nil {
			if sys, ok := st.Sys().(*syscall.Stat_t); ok {
				return int(sys.Uid), int(sys.Gid), nil
			}
			return -1, -1, nil
		}
		if !errors.Is(err, os.ErrNotExist) || filepath.Dir(p) == p {
			return -1, -1, fmt.Errorf("raftstore: data dir: %w", err)
		}
	}
}

// keepOwner gives dir and everything in it to uid:gid when this process
// runs as root and they are another user's: snapshot restore and recover,
// run as root (sudo), must leave files the node's service user can open.
// As any other user it does nothing: files a user creates are its own.
func keepOwner(dir string, uid, gid int) error {
	if os.Geteuid() != 0 || uid <= 0 {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, uid, gid); err != nil {
			return fmt.Errorf("raftstore: give %s back to its owner (uid %d): %w", path, uid, err)
		}
		return nil
	})
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

// openLogStore checks the Raft log's bbolt file (see package boltcheck:
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
func openLogStore(path string, noSync bool) (logs *raftboltdb.BoltStore, err error) {
	if st, statErr := os.Stat(path); statErr == nil {
		err := boltcheck.Check(path, st.Size() <= boltcheck.FullCheckMaxBytes)
		var d *boltcheck.Damage
		if errors.As(err, &d) {
			return nil, logStoreDamaged(path, d)
		}
		if err != nil {
			return nil, fmt.Errorf("raftstore: check %s: %w", path, err)
		}
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
		return nil, fmt.Errorf("raftstore: log store: %w", err)
	}
	return logs, nil
}

func logStoreDamaged(path string, d *boltcheck.Damage) error {
	return fmt.Errorf("%s is damaged: %w; remove this node's data dir and re-add the node to the cluster (it gets a full copy from the leader)", path, d)
}

// lockFile is the data directory's lock: one node per directory. Without
// it a second `serve` on the same directory waited for bbolt's file lock
// and failed with "fsm: open …/fsm.db: timeout"; now it says who holds it.
const lockFile = "LOCK"

// lockDir takes the data directory's lock and writes this process's id into
// it; release gives it up. The lock is flock(2): the kernel drops it when
// the process dies, so a crash leaves no stale lock.
func lockDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("raftstore: data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		who := "another process"
		if pid := strings.TrimSpace(string(holder)); pid != "" {
			who = "another idemgate (pid " + pid + ")"
		}
		return nil, fmt.Errorf("%w: %s is held by %s: stop it, or give this node its own data_dir", ErrDataDirInUse, dir, who)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	f.Sync()
	return func() {
		f.Truncate(0)
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
