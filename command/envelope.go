package command

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/idemgate/idemgate/ttl"
)

// Header is one stored response header.
type Header struct {
	Name, Value []byte
}

// Command is one state machine command: an envelope (type, request id,
// stamp) and the fields of the log format. Which fields a type uses, and
// what they hold where the name does not say it all (Value is a begin's
// fingerprint and an increment's amount), is declared in the command table
// (commands.go), whose constructors build every command. A TTL of zero
// means "never expires".
type Command struct {
	Type    Type
	ReqID   ReqID
	Stamp   int64 // leader's clock, unix nanoseconds; set by the proposer
	Key     []byte
	Value   []byte
	TTL     time.Duration
	Timeout time.Duration
	Fence   uint64
	Version uint64
	Mode    SetMode
	Flags   byte
	Status  int
	Headers []Header
	Body    []byte
	Entries []ttl.Entry
	// DigestKey (fsm.DigestKey) and Window: a RecordBegin's suspect
	// detection (suspect.go).
	DigestKey []byte
	Window    time.Duration
}

// ReqID identifies one client-level request; retries of it carry the same id.
type ReqID [16]byte

// IsZero reports whether id is unset (such commands are not deduplicated).
func (id ReqID) IsZero() bool { return id == ReqID{} }

// Envelope layout: version, type, request id, stamp; then the body.
// Version 2 appends DigestKey and Window; version 1 (before them) carried a
// begin's digest key in Body and its window in Version, and still decodes,
// so a log written by an older build replays the same.
const (
	encodingVersion   = 2
	encodingVersionV1 = 1
	offType           = 1
	offReqID          = 2
	offStamp          = 18
	headerLen         = 26
	maxFields         = 1 << 16
)

// Encode appends the encoding of c to dst and returns it.
func (c *Command) Encode(dst []byte) []byte {
	dst = append(dst, encodingVersion, byte(c.Type))
	dst = append(dst, c.ReqID[:]...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(c.Stamp))
	dst = appendBytes(dst, c.Key)
	dst = appendBytes(dst, c.Value)
	dst = binary.AppendVarint(dst, int64(c.TTL))
	dst = binary.AppendVarint(dst, int64(c.Timeout))
	dst = binary.AppendUvarint(dst, c.Fence)
	dst = binary.AppendUvarint(dst, c.Version)
	dst = append(dst, byte(c.Mode), c.Flags)
	dst = binary.AppendUvarint(dst, uint64(c.Status))
	dst = binary.AppendUvarint(dst, uint64(len(c.Headers)))
	for _, h := range c.Headers {
		dst = appendBytes(dst, h.Name)
		dst = appendBytes(dst, h.Value)
	}
	dst = appendBytes(dst, c.Body)
	dst = binary.AppendUvarint(dst, uint64(len(c.Entries)))
	for _, e := range c.Entries {
		dst = append(dst, byte(e.Kind))
		dst = binary.AppendVarint(dst, e.At)
		dst = appendBytes(dst, e.Key)
	}
	dst = appendBytes(dst, c.DigestKey)
	return binary.AppendVarint(dst, int64(c.Window))
}

// knownVersion reports whether an encoded command's envelope is one this
// build reads.
func knownVersion(encoded []byte) bool {
	return len(encoded) >= headerLen && (encoded[0] == encodingVersion || encoded[0] == encodingVersionV1)
}

// Stamp writes the leader's timestamp into an encoded command in place. It
// lets the node that proposes a command (the leader) stamp bytes that a
// follower encoded, without decoding them.
func Stamp(encoded []byte, unixNano int64) error {
	if !knownVersion(encoded) {
		return ErrBadCommand
	}
	binary.BigEndian.PutUint64(encoded[offStamp:], uint64(unixNano))
	return nil
}

// PeekType returns the type of an encoded command without decoding it.
func PeekType(encoded []byte) (Type, error) {
	if !knownVersion(encoded) {
		return TypeUnknown, ErrBadCommand
	}
	return Type(encoded[offType]), nil
}

// Decode parses an encoded command. Byte slices in c alias b. Garbage gives
// an error wrapping ErrBadCommand, never a panic.
func Decode(b []byte, c *Command) error {
	*c = Command{}
	if len(b) < headerLen {
		return fmt.Errorf("%w: %d bytes, shorter than the header", ErrBadCommand, len(b))
	}
	if b[0] != encodingVersion && b[0] != encodingVersionV1 {
		return fmt.Errorf("%w: encoding version %d", ErrBadCommand, b[0])
	}
	c.Type = Type(b[offType])
	if c.Type.spec() == nil {
		return fmt.Errorf("%w: command type %d", ErrBadCommand, b[offType])
	}
	copy(c.ReqID[:], b[offReqID:offStamp])
	c.Stamp = int64(binary.BigEndian.Uint64(b[offStamp:]))
	r := reader{b: b[headerLen:]}
	c.Key = r.bytes()
	c.Value = r.bytes()
	c.TTL = time.Duration(r.varint())
	c.Timeout = time.Duration(r.varint())
	c.Fence = r.uvarint()
	c.Version = r.uvarint()
	c.Mode = SetMode(r.byte())
	c.Flags = r.byte()
	c.Status = int(r.uvarint())
	if n := r.count(); n > 0 {
		c.Headers = make([]Header, n)
		for i := range c.Headers {
			c.Headers[i] = Header{Name: r.bytes(), Value: r.bytes()}
		}
	}
	c.Body = r.bytes()
	if n := r.count(); n > 0 {
		c.Entries = make([]ttl.Entry, n)
		for i := range c.Entries {
			c.Entries[i] = ttl.Entry{Kind: ttl.Kind(r.byte()), At: r.varint()}
			c.Entries[i].Key = r.bytes()
		}
	}
	if b[0] == encodingVersionV1 {
		if c.Type == TypeRecordBegin {
			c.DigestKey, c.Window, c.Body, c.Version = c.Body, time.Duration(c.Version), nil, 0
		}
	} else {
		c.DigestKey = r.bytes()
		c.Window = time.Duration(r.varint())
	}
	if r.err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadCommand, c.Type, r.err)
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%w: %s: %d trailing bytes", ErrBadCommand, c.Type, len(r.b))
	}
	return c.Validate()
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

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
