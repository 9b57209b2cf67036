package backup

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/fsm"
)

// A backup is one node's state machine at one applied index, in a file an
// operator keeps (GET /v1/snapshot, `idemgate snapshot save`) and restores
// a new cluster from (Restore). It is written once, front to back, so it
// can be streamed, and it is refused whole when any byte of it is wrong:
//
//	magic    8 bytes  "\x89IDGBAK\n" (a high first byte and a newline: a
//	                  transfer that rewrote text is caught at once)
//	version  1 byte   1
//	metalen  4 bytes  big endian, 2..maxMetaBytes
//	meta     metalen  JSON: Meta
//	chunks   repeated 4-byte big-endian length (1..chunkBytes), then
//	                  that many bytes of the state machine's own snapshot
//	                  (fsm/snapshot.go: its header, then the bbolt file)
//	end      4 bytes  zero
//	sum      32 bytes SHA-256 of every byte above, magic included
//
// and nothing after it. Lengths are bounded before anything is allocated,
// so a damaged length is an error, never a huge allocation; the chunking
// lets a reader tell a file cut short from a complete one without knowing
// the size up front.

// ErrInvalid: a backup file is damaged, truncated or not a backup at all.
var ErrInvalid = errors.New("not a valid idemgate snapshot file")

// maxMetaBytes bounds a backup's metadata.
const maxMetaBytes = 64 << 10

const (
	formatVersion = 1
	chunkBytes    = 1 << 20
	headerLen     = 8 + 1 + 4
)

var magic = []byte("\x89IDGBAK\n")

// Meta describes the state a backup holds.
type Meta struct {
	// Index is the last Raft index the state machine had applied: every
	// write acknowledged before the backup was asked for is at or below it.
	Index uint64 `json:"index"`
	// Term is the source node's Raft term when the backup was taken (at
	// least the term of the entry at Index).
	Term uint64 `json:"term"`
	// Servers is the source cluster's membership (for the operator: a
	// restore makes the cluster its config file names).
	Servers []Server `json:"servers"`
	// Node is the node that took it; CreatedAt is when (its clock).
	Node      string    `json:"node"`
	CreatedAt time.Time `json:"created_at"`
}

// Server is one member of the source cluster.
type Server struct {
	ID    string `json:"id"`
	Raft  string `json:"raft"`
	Voter bool   `json:"voter"`
}

// File is a backup ready to be read once, front to back: a spooled,
// unlinked file (Spool). Close removes what is left of it.
type File struct {
	Meta Meta
	Size int64 // bytes
	f    *os.File
	r    *bufio.Reader
}

func (b *File) Read(p []byte) (int, error) { return b.r.Read(p) }

// Close releases the spooled file.
func (b *File) Close() error { return b.f.Close() }

// Spool writes snap as a backup with meta into an unlinked file in
// dir and returns it positioned at its start. meta.Index is taken from the
// snapshot's own header, so the two cannot disagree; CreatedAt is now.
func Spool(dir string, snap raft.FSMSnapshot, meta Meta) (_ *File, err error) {
	f, err := os.CreateTemp(dir, "backup-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	os.Remove(f.Name()) // gone with the last descriptor, even after a crash
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	meta.CreatedAt = time.Now().UTC()
	bw := bufio.NewWriterSize(f, 256<<10)
	w := &writer{w: bw, h: sha256.New(), meta: meta}
	if err := snap.Persist(w); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	if !w.closed {
		return nil, errors.New("backup: the state machine's snapshot did not finish")
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	return &File{Meta: w.meta, Size: size, f: f, r: bufio.NewReaderSize(f, 256<<10)}, nil
}

// writer is the raft.SnapshotSink the state machine persists into: it
// holds back the snapshot's header until it has the applied index for the
// metadata, then writes the file's header, the chunks and, on Close, the
// end and the checksum.
type writer struct {
	w      io.Writer
	h      hash.Hash
	meta   Meta
	head   []byte // the state machine's header, until the file's is written
	buf    []byte // the chunk being filled
	err    error
	closed bool
}

// fsmHeaderLen is the state machine's snapshot header (fsm/snapshot.go):
// magic, version, applied index.
const fsmHeaderLen = 16

func (b *writer) Write(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n := len(p)
	if b.head != nil || b.buf == nil {
		need := fsmHeaderLen - len(b.head)
		take := min(need, len(p))
		b.head, p = append(b.head, p[:take]...), p[take:]
		if len(b.head) < fsmHeaderLen {
			return n, nil
		}
		if b.err = b.start(); b.err != nil {
			return 0, b.err
		}
	}
	for len(p) > 0 {
		take := min(chunkBytes-len(b.buf), len(p))
		b.buf, p = append(b.buf, p[:take]...), p[take:]
		if len(b.buf) == chunkBytes {
			if b.err = b.flush(); b.err != nil {
				return 0, b.err
			}
		}
	}
	return n, nil
}

// start writes the file's header once the state machine's is complete.
func (b *writer) start() error {
	idx, err := fsm.SnapshotAppliedIndex(bytes.NewReader(b.head))
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	b.meta.Index = idx
	meta, err := json.Marshal(b.meta)
	if err != nil {
		return err
	}
	if len(meta) > maxMetaBytes {
		return fmt.Errorf("backup: metadata of %d bytes is over %d", len(meta), maxMetaBytes)
	}
	hdr := append(append([]byte(nil), magic...), formatVersion)
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(len(meta)))
	if err := b.emit(append(hdr, meta...)); err != nil {
		return err
	}
	b.buf = append(make([]byte, 0, chunkBytes), b.head...)
	b.head = nil
	return nil
}

func (b *writer) flush() error {
	if len(b.buf) == 0 {
		return nil
	}
	if err := b.emit(binary.BigEndian.AppendUint32(nil, uint32(len(b.buf)))); err != nil {
		return err
	}
	if err := b.emit(b.buf); err != nil {
		return err
	}
	b.buf = b.buf[:0]
	return nil
}

func (b *writer) emit(p []byte) error {
	b.h.Write(p)
	_, err := b.w.Write(p)
	return err
}

// Close ends the file: the last chunk, the end mark and the checksum.
func (b *writer) Close() error {
	if b.err != nil {
		return b.err
	}
	if b.buf == nil {
		b.err = errors.New("backup: the state machine's snapshot is shorter than its header")
		return b.err
	}
	if b.err = b.flush(); b.err == nil {
		b.err = b.emit([]byte{0, 0, 0, 0})
	}
	if b.err == nil {
		_, b.err = b.w.Write(b.h.Sum(nil))
	}
	b.closed = b.err == nil
	return b.err
}

// Cancel abandons the backup (the state machine failed to persist).
func (b *writer) Cancel() error {
	if b.err == nil {
		b.err = errors.New("backup: cancelled")
	}
	return nil
}

func (b *writer) ID() string { return "backup" }

// reader reads a backup: the metadata, then (Read) the state
// machine's snapshot. Nothing it returns is trusted before Read has
// returned io.EOF: only then has the whole file's checksum been checked,
// and the end of the file found where it must be. A damaged file makes
// Read return an error wrapping ErrInvalid instead.
type reader struct {
	Meta Meta
	r    *bufio.Reader
	h    hash.Hash
	left int  // bytes left in the current chunk
	done bool // the end mark and checksum were read and match
	err  error
}

// newReader reads a backup's header and metadata from r.
func newReader(r io.Reader) (*reader, error) {
	br := &reader{r: bufio.NewReaderSize(r, 64<<10), h: sha256.New()}
	var hdr [headerLen]byte
	if err := br.full(hdr[:]); err != nil {
		return nil, err
	}
	if !bytes.Equal(hdr[:8], magic) {
		return nil, fmt.Errorf("%w: it does not start with the snapshot file's magic bytes", ErrInvalid)
	}
	if hdr[8] != formatVersion {
		return nil, fmt.Errorf("%w: format version %d, this build reads %d", ErrInvalid, hdr[8], formatVersion)
	}
	n := binary.BigEndian.Uint32(hdr[9:])
	if n < 2 || n > maxMetaBytes {
		return nil, fmt.Errorf("%w: metadata length %d is outside 2..%d", ErrInvalid, n, maxMetaBytes)
	}
	meta := make([]byte, n)
	if err := br.full(meta); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(meta, &br.Meta); err != nil {
		return nil, fmt.Errorf("%w: metadata: %v", ErrInvalid, err)
	}
	return br, nil
}

// full reads exactly len(p) bytes into the checksum; a short file is
// ErrInvalid.
func (br *reader) full(p []byte) error {
	if _, err := io.ReadFull(br.r, p); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: the file ends early (truncated)", ErrInvalid)
		}
		return err
	}
	br.h.Write(p)
	return nil
}

// Read reads the state machine's snapshot; io.EOF only once the whole file
// checked out.
func (br *reader) Read(p []byte) (int, error) {
	if br.err != nil {
		return 0, br.err
	}
	for br.left == 0 {
		if br.done {
			return 0, io.EOF
		}
		if br.err = br.next(); br.err != nil {
			return 0, br.err
		}
	}
	n, err := br.r.Read(p[:min(len(p), br.left)])
	br.h.Write(p[:n])
	br.left -= n
	if err != nil && (br.left > 0 || !errors.Is(err, io.EOF)) {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: the file ends early (truncated)", ErrInvalid)
		}
		br.err = err
		return n, err
	}
	return n, nil
}

// next reads a chunk's length, or the end mark, the checksum and the end
// of the file.
func (br *reader) next() error {
	var l [4]byte
	if err := br.full(l[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(l[:])
	if n > chunkBytes {
		return fmt.Errorf("%w: chunk length %d is over %d", ErrInvalid, n, chunkBytes)
	}
	if n > 0 {
		br.left = int(n)
		return nil
	}
	want := br.h.Sum(nil)
	var sum [sha256.Size]byte
	if _, err := io.ReadFull(br.r, sum[:]); err != nil {
		return fmt.Errorf("%w: the file ends early (truncated)", ErrInvalid)
	}
	if !bytes.Equal(sum[:], want) {
		return fmt.Errorf("%w: SHA-256 mismatch: the file is damaged", ErrInvalid)
	}
	if _, err := br.r.ReadByte(); err != io.EOF {
		if err == nil {
			return fmt.Errorf("%w: data after the checksum", ErrInvalid)
		}
		return err
	}
	br.done = true
	return nil
}

// Verify reads a whole backup from r and checks it: the checksum, the
// framing, and that the state machine's snapshot inside holds the index
// the metadata names. It returns the metadata and the file's size.
func Verify(r io.Reader) (Meta, int64, error) {
	cr := &countingReader{r: r}
	br, err := newReader(cr)
	if err != nil {
		return Meta{}, cr.n, err
	}
	idx, err := fsm.SnapshotAppliedIndex(br)
	if err != nil {
		if !errors.Is(err, ErrInvalid) {
			err = fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		return br.Meta, cr.n, err
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return br.Meta, cr.n, err
	}
	if idx != br.Meta.Index {
		return br.Meta, cr.n, fmt.Errorf("%w: metadata names index %d, the state inside is at %d", ErrInvalid, br.Meta.Index, idx)
	}
	return br.Meta, cr.n, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
