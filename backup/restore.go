package backup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/datadir"
	"github.com/idemgate/idemgate/fsm"
)

// Restore builds a node's data directory from a backup file, as etcdctl
// snapshot restore does for etcd: the node then starts (raftstore.Open) as
// a member of a new cluster of voters, holding the backup's state.
// Every node of the new cluster is restored from the same file.
//
// The directory holds afterwards what Raft would have left had it taken the
// snapshot itself:
//
//   - a Raft snapshot (the file snapshot store) at the backup's index and
//     term, whose configuration is voters, so Raft starts from it and
//     never bootstraps (raft.HasExistingState);
//   - fsm.db, the state machine's file, restored from that snapshot, so it
//     is not behind it and the node has nothing to catch up;
//   - the Raft log (raft.db or raft-wal/, cfg.LogStore) with only the current term, set to the backup's term. A new
//     cluster whose term started below its snapshot's would write entries
//     of a lower term after it, and a node holding only the snapshot would
//     then win an election against one holding those committed entries.
//
// The whole file is checked before anything is written; a directory that
// holds anything but a lock file is refused (restore into a new one); a
// failure part way removes what was written. Run as root, it leaves the
// files to the owner of the directory (or of where it creates it).
func Restore(cfg Config, path string, voters []Voter) (Meta, error) {
	if err := cfg.Validate(); err != nil {
		return Meta{}, err
	}
	if len(voters) == 0 {
		return Meta{}, errors.New("backup: restore: the new cluster has no voters")
	}
	conf, err := configuration(voters)
	if err != nil {
		return Meta{}, err
	}
	meta, err := verifyFile(path)
	if err != nil {
		return meta, err
	}
	if meta.Index == 0 || meta.Term == 0 {
		return meta, fmt.Errorf("%w: index %d, term %d: it holds no state", ErrInvalid, meta.Index, meta.Term)
	}
	if err := checkEmptyDir(cfg.DataDir); err != nil {
		return meta, err
	}
	uid, gid, err := datadir.Owner(cfg.DataDir)
	if err != nil {
		return meta, err
	}
	_, statErr := os.Stat(cfg.DataDir)
	created := errors.Is(statErr, os.ErrNotExist)
	if err := datadir.Private(cfg.DataDir); err != nil {
		return meta, err
	}
	unlock, err := datadir.Lock(cfg.DataDir)
	if err != nil {
		return meta, err
	}
	if err := checkEmptyDir(cfg.DataDir); err != nil { // another restore won the race
		unlock()
		return meta, err
	}
	err = restoreInto(cfg, path, meta, conf)
	if err != nil {
		for _, name := range restoredFiles {
			os.RemoveAll(filepath.Join(cfg.DataDir, name))
		}
	}
	unlock()
	if err != nil {
		if created { // leave no trace: the directory did not exist
			os.Remove(filepath.Join(cfg.DataDir, datadir.LockFile))
			os.Remove(cfg.DataDir)
		}
		return meta, err
	}
	if err := datadir.KeepOwner(cfg.DataDir, uid, gid); err != nil {
		return meta, err
	}
	return meta, syncDir(cfg.DataDir)
}

// restoredFiles are the names a restore creates in the data directory.
var restoredFiles = []string{"snapshots", "fsm.db", "fsm.db.restore", "fsm.db.boot", "fsm.db.clean", datadir.BoltLogFile, datadir.WALDir}

func restoreInto(cfg Config, path string, meta Meta, conf raft.Configuration) error {
	snaps, err := datadir.SnapshotStore(cfg.DataDir, hclog.NewNullLogger())
	if err != nil {
		return err
	}
	// The state machine first, from the backup (checked again as it is
	// read: the file may have changed since it was verified). A restored
	// backup is a new cluster: the old one's id goes, and the new
	// cluster's first leader gives it one of its own, so the old cluster's
	// nodes and the new one's refuse each other's traffic.
	f, err := cfg.openFSM()
	if err != nil {
		return fmt.Errorf("backup: restore: %w", err)
	}
	defer f.Close()
	if err := restoreBackup(f, path); err != nil {
		return err
	}
	if got := f.AppliedIndex(); got != meta.Index {
		return fmt.Errorf("%w: the state inside is at index %d, the metadata names %d", ErrInvalid, got, meta.Index)
	}
	if err := f.ClearClusterID(); err != nil {
		return fmt.Errorf("backup: restore: %w", err)
	}
	// Then the Raft snapshot, written from that state, so the two agree.
	_, trans := inmemTransport()
	defer trans.Close()
	sink, err := snaps.Create(raft.SnapshotVersionMax, meta.Index, meta.Term, conf, meta.Index, trans)
	if err != nil {
		return fmt.Errorf("backup: restore: %w", err)
	}
	if err := f.SnapshotTo(sink); err != nil {
		return fmt.Errorf("backup: restore: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("backup: restore: %w", err)
	}

	logs, err := datadir.OpenLog(cfg.DataDir, cfg.LogStore, false)
	if err != nil {
		return err
	}
	// hashicorp/raft's stable-store key for the current term (raft.go).
	if err := logs.SetUint64([]byte("CurrentTerm"), meta.Term); err != nil {
		logs.Close()
		return fmt.Errorf("backup: restore: %w", err)
	}
	return logs.Close()
}

// restoreBackup restores the state machine's snapshot out of the backup at
// path into f; an error when the file does not check out to its end.
func restoreBackup(f *fsm.FSM, path string) error {
	file, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("backup: restore: %w", err)
	}
	defer file.Close()
	br, err := newReader(file)
	if err != nil {
		return err
	}
	if err := f.Restore(io.NopCloser(br)); err != nil {
		if errors.Is(err, ErrInvalid) {
			return err
		}
		return fmt.Errorf("backup: restore: %w", err)
	}
	return nil
}

// verifyFile checks the whole backup at path (Verify).
func verifyFile(path string) (Meta, error) {
	f, err := os.Open(path)
	if err != nil {
		return Meta{}, fmt.Errorf("backup: %w", err)
	}
	defer f.Close()
	meta, _, err := Verify(f)
	return meta, err
}

// ErrDataDirNotEmpty: a restore was asked into a directory that holds data.
var ErrDataDirNotEmpty = errors.New("data dir is not empty")

// checkEmptyDir refuses a directory holding anything but the lock file.
func checkEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("backup: data dir: %w", err)
	}
	for _, e := range entries {
		if e.Name() != datadir.LockFile {
			return fmt.Errorf("%w: %s holds %s: restore into a new directory, or move this one aside first", ErrDataDirNotEmpty, dir, e.Name())
		}
	}
	return nil
}

// syncDir makes the names created in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("backup: sync %s: %w", dir, err)
	}
	return nil
}
