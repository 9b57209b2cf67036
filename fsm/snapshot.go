package fsm

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// Snapshot captures a read transaction: a consistent view that costs nothing
// to take. The bytes are written in Persist, off the apply path.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.db == nil {
		return nil, ErrStorage
	}
	tx, err := f.db.Begin(false)
	if err != nil {
		return nil, fmt.Errorf("fsm: snapshot: %w", err)
	}
	return &snapshot{tx: tx}, nil
}

type snapshot struct{ tx *bolt.Tx }

// Persist writes the whole bbolt file, as the transaction sees it, to sink.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := s.tx.WriteTo(sink); err != nil {
		sink.Cancel()
		return fmt.Errorf("fsm: persist snapshot: %w", err)
	}
	return sink.Close()
}

// Release ends the read transaction.
func (s *snapshot) Release() { s.tx.Rollback() }

// Restore discards all state and replaces it with the snapshot in rc: the
// stream is written to a file beside the data file, checked to be a bbolt
// file of this format, and renamed over it.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	tmp := f.cfg.Path + ".restore"
	if err := writeFileSync(tmp, rc); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fsm: restore: %w", err)
	}
	check, err := openDB(tmp, true)
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fsm: restore: snapshot is not a valid data file: %w", err)
	}
	check.Close()

	f.mu.Lock()
	defer f.mu.Unlock()
	if f.db != nil {
		if err := f.db.Close(); err != nil {
			return fmt.Errorf("fsm: restore: close: %w", err)
		}
		f.db = nil
	}
	if err := os.Rename(tmp, f.cfg.Path); err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	db, err := openDB(f.cfg.Path, f.cfg.NoSync)
	if err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	f.db = db
	return f.load()
}

func writeFileSync(path string, r io.Reader) error {
	out, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, r)
	if err == nil {
		err = out.Sync()
	}
	return errors.Join(err, out.Close())
}
