package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/boltcheck"
)

// A snapshot is a 16-byte header, then the state:
//
//	"IDGSNAP" | version (1) | applied index (8)
//
// The header lets a node tell, without reading the rest, whether its own
// data file is behind the snapshot. Version 2 (written since) is the live
// pairs only, as a stream (snapstream.go): a bbolt file's free pages and
// half-full pages are not copied. Version 1 (still read) was the bbolt file
// itself, free pages included.
var snapMagic = []byte("IDGSNAP")

const (
	snapHeaderLen = 16
	snapVersion1  = 1 // the bbolt file
	snapVersion2  = 2 // the live pairs (snapstream.go)
)

// Snapshot captures a read transaction: a consistent view that costs nothing
// to take. The bytes are written in Persist, off the apply path.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.db == nil {
		return nil, command.ErrStorage
	}
	// The snapshot is of a committed state, at the applied index: Raft
	// compacts the log below it.
	if err := f.flush(); err != nil {
		return nil, fmt.Errorf("fsm: snapshot: %w", err)
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

// Persist writes the header and the live pairs to sink, paced.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	return s.write(sink, true)
}

// write writes the header and the live pairs to sink, paced or not.
func (s *snapshot) write(sink raft.SnapshotSink, paced bool) error {
	hdr := append(append([]byte(nil), snapMagic...), snapVersion2)
	hdr = binary.BigEndian.AppendUint64(hdr, s.applied)
	if _, err := sink.Write(hdr); err != nil {
		sink.Cancel()
		return fmt.Errorf("fsm: persist snapshot: %w", err)
	}
	var w io.Writer = sink
	if paced {
		w = &pacedWriter{w: sink}
	}
	if err := writePairs(w, s.tx); err != nil {
		sink.Cancel()
		return fmt.Errorf("fsm: persist snapshot: %w", err)
	}
	return sink.Close()
}

// Release ends the read transaction.
func (s *snapshot) Release() { s.tx.Rollback() }

// SnapshotTo writes a snapshot of the state to sink at full speed, for a
// state machine nothing applies to (restore writes the new cluster's first
// snapshot with it); a live node's snapshots go through Snapshot, paced.
func (f *FSM) SnapshotTo(sink raft.SnapshotSink) error {
	snap, err := f.Snapshot()
	if err != nil {
		sink.Cancel()
		return err
	}
	defer snap.Release()
	return snap.(*snapshot).write(sink, false)
}

// Restore discards all state and replaces it with the snapshot in rc: the
// stream is written to a file beside the data file, checked to be a bbolt
// file of this format, and renamed over it.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	defer holdBulkPace()()
	version, _, err := readSnapHeader(rc)
	if err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	tmp := f.cfg.Path + ".restore"
	os.Remove(tmp) // a previous attempt's
	if version == snapVersion1 {
		err = writeFileSync(tmp, rc)
	} else {
		err = readPairs(rc, tmp)
	}
	if err != nil {
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
	// Whatever a listener cached of the old state is dropped, however the
	// swap below ends.
	if o := f.kvObserver(); o != nil {
		defer o.KVChanged(nil, nil, true)
	}
	// What the open transaction holds is committed into the old file (a
	// failed swap keeps it); bbolt's writer is free for the old file's Close.
	if err := f.flush(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fsm: restore: %w", err)
	}
	old := f.db
	if err := os.Rename(tmp, f.cfg.Path); err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	f.db = nil
	db, err := openDB(f.cfg.Path, f.cfg.NoSync)
	if err != nil {
		if old != nil {
			go old.Close()
		}
		return fmt.Errorf("fsm: restore: %w", err)
	}
	f.db = db
	if old != nil {
		// The old file is closed off the restore: a snapshot being
		// persisted may still read it through its read transaction, and
		// bbolt's Close waits for that. hashicorp/raft can take a snapshot
		// while it installs another: its snapshot goroutine then waits on
		// the main goroutine (for the configuration), which waits on this
		// restore. Waiting here closed that circle for good. Renamed over,
		// the old file lives on until it is closed.
		go old.Close()
	}
	return f.load()
}

// SnapshotAppliedIndex reads a snapshot's header from r and returns the
// applied index of the state it holds; r is left at the state.
func SnapshotAppliedIndex(r io.Reader) (uint64, error) {
	_, applied, err := readSnapHeader(r)
	return applied, err
}

func readSnapHeader(r io.Reader) (version byte, applied uint64, err error) {
	var hdr [snapHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, 0, fmt.Errorf("snapshot header: %w", err)
	}
	version = hdr[len(snapMagic)]
	if !bytes.Equal(hdr[:len(snapMagic)], snapMagic) || (version != snapVersion1 && version != snapVersion2) {
		return 0, 0, errors.New("not an idemgate snapshot (bad header)")
	}
	return version, binary.BigEndian.Uint64(hdr[8:]), nil
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

// pacedWriter lets a snapshot use at most half of a core: after each
// paceChunk bytes it sleeps as long as producing them took. Writing the
// pairs is CPU work (a cursor over every page, two checksums: ours and
// the snapshot store's) that competes with the apply path and the
// listeners; on two cores a 1M-key snapshot at full speed took 0.5 s and
// raised the write p99 2.5 times. Paced, a snapshot takes about twice as
// long and leaves the writes their share.
type pacedWriter struct {
	w       io.Writer
	n       int
	started time.Time
}

const paceChunk = 4 << 20

func (p *pacedWriter) Write(b []byte) (int, error) {
	if p.started.IsZero() {
		p.started = time.Now()
	}
	n, err := p.w.Write(b)
	p.n += n
	if p.n >= paceChunk {
		time.Sleep(time.Since(p.started))
		p.n, p.started = 0, time.Now()
	}
	return n, err
}
