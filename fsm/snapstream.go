package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	bolt "go.etcd.io/bbolt"
)

// The state of a version 2 snapshot: every bucket and pair of the data
// file, in key order, as records. A bbolt file copied whole (version 1)
// carries its free pages and the half-full pages of time-ordered indexes:
// after 200k of 1M keys expired, a 450 MB file made a 450 MB snapshot. The
// stream carries the live data only, and restore rebuilds the file with
// full pages (the pairs arrive in key order).
//
//	'B' | name                      a bucket opens, inside the open one (at the top: the file)
//	'P' | key | value               a pair of the open bucket
//	'E'                             the open bucket closes
//	'Z' | CRC-32C (4, big endian)   the end: the checksum of every record before it
//
// name, key and value are a uvarint length and the bytes.
const (
	recBucket = 'B'
	recPair   = 'P'
	recEnd    = 'E'
	recFinal  = 'Z'

	maxSnapDepth = 8
	maxSnapValue = 1 << 30 // a stored value is bounded by the command limit, at most 1 GiB
	// restoreTxPairs and restoreTxBytes bound one restore transaction:
	// bbolt holds a transaction's dirty pages in memory until it commits.
	restoreTxPairs = 1 << 16
	restoreTxBytes = 32 << 20
)

// castagnoli is CRC-32C's table: a stream's checksum, as a record's
// (package command's ResponseSum).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// writePairs writes the state tx sees as records to w.
func writePairs(w io.Writer, tx *bolt.Tx) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	sw := &snapWriter{w: bw, crc: crc32.New(castagnoli)}
	err := tx.ForEach(func(name []byte, b *bolt.Bucket) error { return sw.bucket(name, b) })
	if err != nil {
		return err
	}
	sw.buf = append(sw.buf[:0], recFinal)
	if err := sw.flush(); err != nil {
		return err
	}
	if _, err := bw.Write(binary.BigEndian.AppendUint32(nil, sw.crc.Sum32())); err != nil {
		return err
	}
	return bw.Flush()
}

type snapWriter struct {
	w   io.Writer
	crc hash.Hash32
	buf []byte
}

func (sw *snapWriter) flush() error {
	sw.crc.Write(sw.buf)
	_, err := sw.w.Write(sw.buf)
	return err
}

func (sw *snapWriter) bucket(name []byte, b *bolt.Bucket) error {
	sw.buf = appendBytes(append(sw.buf[:0], recBucket), name)
	if err := sw.flush(); err != nil {
		return err
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil { // a nested bucket
			if err := sw.bucket(k, b.Bucket(k)); err != nil {
				return err
			}
			continue
		}
		sw.buf = appendBytes(appendBytes(append(sw.buf[:0], recPair), k), v)
		if err := sw.flush(); err != nil {
			return err
		}
	}
	sw.buf = append(sw.buf[:0], recEnd)
	return sw.flush()
}

// readPairs rebuilds the data file at path from records read from r. The
// file is written without fsync and synced once at the end; a stream that
// is damaged, truncated or fails its checksum is an error (the caller
// removes the file).
func readPairs(r io.Reader, path string) error {
	db, err := openDB(path, true)
	if err != nil {
		return err
	}
	defer db.Close()
	sr := &snapReader{r: bufio.NewReaderSize(r, 1<<20), crc: crc32.New(castagnoli)}
	var open [][]byte // the open buckets, outermost first
	for done := false; !done; {
		tx, err := db.Begin(true)
		if err != nil {
			return err
		}
		done, open, err = sr.fill(tx, open)
		if err == nil {
			err = tx.Commit()
		} else {
			tx.Rollback()
		}
		if err != nil {
			return err
		}
	}
	if len(open) != 0 {
		return errors.New("snapshot: a bucket was never closed")
	}
	return db.Sync()
}

type snapReader struct {
	r    *bufio.Reader
	crc  hash.Hash32
	one  [1]byte
	slab []byte // see alloc
}

// fill applies records to tx until the stream ends (done) or the
// transaction's bounds are reached; open is the bucket path on entry and
// on return.
func (sr *snapReader) fill(tx *bolt.Tx, open [][]byte) (done bool, _ [][]byte, _ error) {
	var cur *bolt.Bucket
	for i, name := range open { // reopen the path in this transaction
		var err error
		if i == 0 {
			cur, err = tx.CreateBucketIfNotExists(name)
		} else {
			cur, err = cur.CreateBucketIfNotExists(name)
		}
		if err != nil {
			return false, open, err
		}
		cur.FillPercent = 1.0 // pairs arrive in key order
	}
	pairs, bytes := 0, 0
	for pairs < restoreTxPairs && bytes < restoreTxBytes {
		kind, err := sr.byte()
		if err != nil {
			return false, open, err
		}
		switch kind {
		case recBucket:
			name, err := sr.field(bolt.MaxKeySize)
			if err != nil {
				return false, open, err
			}
			if len(open) == maxSnapDepth {
				return false, open, errors.New("snapshot: buckets nested too deep")
			}
			if cur == nil {
				cur, err = tx.CreateBucketIfNotExists(name)
			} else {
				cur, err = cur.CreateBucketIfNotExists(name)
			}
			if err != nil {
				return false, open, fmt.Errorf("snapshot: bucket %q: %w", name, err)
			}
			cur.FillPercent = 1.0
			open = append(open, name)
		case recPair:
			if cur == nil {
				return false, open, errors.New("snapshot: a pair outside every bucket")
			}
			k, err := sr.field(bolt.MaxKeySize)
			if err != nil {
				return false, open, err
			}
			v, err := sr.field(maxSnapValue)
			if err != nil {
				return false, open, err
			}
			if err := cur.Put(k, v); err != nil {
				return false, open, fmt.Errorf("snapshot: put: %w", err)
			}
			pairs, bytes = pairs+1, bytes+len(k)+len(v)
		case recEnd:
			if len(open) == 0 {
				return false, open, errors.New("snapshot: a bucket closed that was not open")
			}
			open = open[:len(open)-1]
			cur = nil
			for i, name := range open {
				if i == 0 {
					cur = tx.Bucket(name)
				} else {
					cur = cur.Bucket(name)
				}
			}
		case recFinal:
			want := sr.crc.Sum32()
			var sum [4]byte
			if _, err := io.ReadFull(sr.r, sum[:]); err != nil {
				return false, open, fmt.Errorf("snapshot: checksum: %w", err)
			}
			if binary.BigEndian.Uint32(sum[:]) != want {
				return false, open, errors.New("snapshot: checksum mismatch (damaged)")
			}
			return true, open, nil
		default:
			return false, open, fmt.Errorf("snapshot: unknown record %q", kind)
		}
	}
	return false, open, nil
}

func (sr *snapReader) byte() (byte, error) {
	b, err := sr.ReadByte()
	if err != nil {
		return 0, fmt.Errorf("snapshot: %w", unexpected(err))
	}
	return b, nil
}

// ReadByte reads one byte through the checksum (binary.ReadUvarint uses it).
func (sr *snapReader) ReadByte() (byte, error) {
	b, err := sr.r.ReadByte()
	if err == nil {
		sr.one[0] = b
		sr.crc.Write(sr.one[:])
	}
	return b, err
}

// field reads a uvarint length and that many bytes (at most limit).
func (sr *snapReader) field(limit int) ([]byte, error) {
	n, err := binary.ReadUvarint(sr)
	if err != nil {
		return nil, fmt.Errorf("snapshot: length: %w", unexpected(err))
	}
	if n > uint64(limit) {
		return nil, fmt.Errorf("snapshot: a field of %d bytes, over the limit of %d", n, limit)
	}
	b := sr.alloc(int(n))
	if _, err := io.ReadFull(sr.r, b); err != nil {
		return nil, fmt.Errorf("snapshot: %w", unexpected(err))
	}
	sr.crc.Write(b)
	return b, nil
}

// alloc returns n bytes for a field. bbolt keeps referring to a key and a
// value until its transaction commits, so fields are never reused; small
// ones are carved from a shared slab, one allocation for thousands of
// pairs (a restore of millions of pairs spent a third of its time in
// malloc).
func (sr *snapReader) alloc(n int) []byte {
	const slabSize = 1 << 20
	if n > slabSize/16 {
		return make([]byte, n)
	}
	if cap(sr.slab)-len(sr.slab) < n {
		sr.slab = make([]byte, 0, slabSize)
	}
	b := sr.slab[len(sr.slab) : len(sr.slab)+n : len(sr.slab)+n]
	sr.slab = sr.slab[:len(sr.slab)+n]
	return b
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF // a stream ends only at its final record
	}
	return err
}
