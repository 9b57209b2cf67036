package fsm

import (
	"encoding/binary"
	"fmt"
)

// The state machine's own encodings (its stored records, the request
// memory) are read and written with these, as package command reads and
// writes the log's.

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// maxFields bounds a collection's length, so garbage cannot make a huge
// allocation.
const maxFields = 1 << 16

// reader decodes fields and remembers the first error; after one every read
// returns a zero value, so decoding code stays linear.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("truncated or invalid %s", what)
	}
	r.b = nil
}

func (r *reader) byte() byte {
	if len(r.b) < 1 {
		r.fail("byte")
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.fail("length")
		return nil
	}
	if n == 0 {
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// fixed fills dst with the next len(dst) bytes.
func (r *reader) fixed(dst []byte) {
	if len(r.b) < len(dst) {
		r.fail("fixed-size field")
		return
	}
	r.b = r.b[copy(dst, r.b):]
}

func (r *reader) uint32() uint32 {
	if len(r.b) < 4 {
		r.fail("uint32")
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) int64() int64 {
	if len(r.b) < 8 {
		r.fail("int64")
		return 0
	}
	v := int64(binary.BigEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

// count reads a collection length, bounded so garbage cannot make a huge
// allocation: every element takes at least one byte.
func (r *reader) count() int {
	n := r.uvarint()
	if r.err != nil {
		return 0
	}
	if n > maxFields || n > uint64(len(r.b)) {
		r.fail("count")
		return 0
	}
	return int(n)
}
