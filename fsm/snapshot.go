package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/internal/boltcheck"
)

// A snapshot is a 16-byte header, then the bbolt file as a read transaction
// sees it:
//
//	"IDGSNAP" | version (1) | applied index (8)
//
// The header lets a node tell, without reading the rest, whether its own
// data file is behind the snapshot.
var snapMagic = []byte("IDGSNAP")

const snapHeaderLen = 16

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
	applied := getUint64(tx.Bucket(bucketMeta).Get(keyApplied))
	return &snapshot{tx: tx, applied: applied}, nil
}

type snapshot struct {
	tx      *bolt.Tx
	applied uint64
}

// Persist writes the header and the whole bbolt file to sink.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	hdr := append(append([]byte(nil), snapMagic...), 1)
	hdr = binary.BigEndian.AppendUint64(hdr, s.applied)
	if _, err := sink.Write(hdr); err != nil {
		sink.Cancel()
		return fmt.Errorf("fsm: persist snapshot: %w", err)
	}
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
	if _, err := SnapshotAppliedIndex(rc); err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	tmp := f.cfg.Path + ".restore"
	if err := writeFileSync(tmp, rc); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fsm: restore: %w", err)
	}
	if err := boltcheck.Check(tmp, true); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fsm: restore: snapshot is not a valid data file: %w", err)
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

// SnapshotAppliedIndex reads a snapshot's header from r and returns the
// applied index of the state it holds; r is left at the bbolt file.
func SnapshotAppliedIndex(r io.Reader) (uint64, error) {
	var hdr [snapHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, fmt.Errorf("snapshot header: %w", err)
	}
	if !bytes.Equal(hdr[:len(snapMagic)], snapMagic) || hdr[len(snapMagic)] != 1 {
		return 0, errors.New("not an idemgate snapshot (bad header)")
	}
	return binary.BigEndian.Uint64(hdr[8:]), nil
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
