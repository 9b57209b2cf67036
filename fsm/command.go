package fsm

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/idemgate/idemgate/ttl"
)

// Type identifies a command. Values are part of the log format: never
// renumber them; add new ones at the end.
type Type byte

// The commands.
const (
	TypeUnknown Type = iota
	TypeNoop         // carries an opaque payload; changes nothing but the clock
	TypeRecordBegin
	TypeRecordComplete
	TypeRecordRelease
	TypeRecordMarkUnknown
	TypeExpire
	TypeTokenIssue
	TypeTokenConsume
	TypeKVSet
	TypeKVGetDel
	TypeKVDelete
	TypeKVIncr        // add an integer to a KV key's decimal value (Redis INCRBY)
	TypeKVExpire      // change a KV key's lifetime (Redis EXPIRE, PERSIST)
	TypeClusterID     // give the cluster its id, unless it has one (cluster.go)
	TypeMemberRemoved // remember a removed node id and its certificates (cluster.go)
	typeEnd
)

var typeNames = [...]string{"unknown", "noop", "record_begin", "record_complete",
	"record_release", "record_mark_unknown", "expire", "token_issue", "token_consume",
	"kv_set", "kv_getdel", "kv_delete", "kv_incr", "kv_expire", "cluster_id", "member_removed"}

func (t Type) String() string {
	if t < typeEnd {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", byte(t))
}

// SetMode selects the flavour of TypeKVSet.
type SetMode byte

// The set modes.
const (
	SetPlain SetMode = 0 // unconditional set
	SetNX    SetMode = 1 // only if the key does not exist
	SetCAS   SetMode = 2 // only if the key's version equals Command.Version (0: must not exist)
	SetXX    SetMode = 3 // only if the key exists (fsm.ErrNotFound if not)
)

// Begin flags.
const (
	// FlagReleaseUnknown: when the existing record's outcome is unknown
	// (its processing deadline passed), take it over instead of reporting it.
	FlagReleaseUnknown byte = 1 << 0
	// FlagRejectSuspect: refuse to begin a suspected duplicate (CodeSuspect)
	// instead of beginning it and reporting the suspicion.
	FlagRejectSuspect byte = 1 << 1
)

// KVSet flags.
const (
	// FlagKeepTTL: keep the key's lifetime instead of setting Command.TTL
	// (which must be zero); a new key never expires.
	FlagKeepTTL byte = 1 << 0
	// FlagReturnOld: the result carries the value the key had before, set
	// or not (Redis SET ... GET), in Result.Value. The code says whether
	// it had one: CodeOK and CodeExists yes, CodeCreated and CodeNotFound no.
	FlagReturnOld byte = 1 << 1
)

// KVExpire flags: the conditions of Redis 7's EXPIRE, on the lifetime the
// key has (no lifetime counts as infinite), and expiry at once.
const (
	FlagExpireNX  byte = 1 << 0 // only if the key has no lifetime
	FlagExpireXX  byte = 1 << 1 // only if it has one
	FlagExpireGT  byte = 1 << 2 // only if the new expiry is later
	FlagExpireLT  byte = 1 << 3 // only if the new expiry is earlier
	FlagExpireNow byte = 1 << 4 // the key expires now: it is deleted (TTL must be zero)
	expireFlags        = FlagExpireNX | FlagExpireXX | FlagExpireGT | FlagExpireLT | FlagExpireNow
)

// Complete flags.
const (
	// FlagBodyDropped: the response body was too large to store; replays
	// cannot be served.
	FlagBodyDropped byte = 1 << 0
)

// Header is one stored response header.
type Header struct {
	Name, Value []byte
}

// Command is one state machine command. Which fields matter depends on Type:
//
//	Noop:            Value (opaque payload)
//	RecordBegin:     Key, Value (fingerprint), TTL, Timeout (processing), Flags,
//	                 DigestKey (for suspect detection; empty: none), Window
//	RecordComplete:  Key, Fence, Status, Flags, Headers, Body
//	RecordRelease:   Key, Fence (0: release whatever owns it, by hand)
//	RecordMarkUnknown: Key, Fence
//	Expire:          Entries
//	TokenIssue:      Key (TokenKey(scope, token)), TTL
//	TokenConsume:    Key
//	KVSet:           Key, Value, TTL, Mode, Version (SetCAS), Flags (FlagKeepTTL, FlagReturnOld)
//	KVGetDel, KVDelete: Key
//	KVIncr:          Key, Value (the increment: a signed decimal integer)
//	KVExpire:        Key, TTL (zero without FlagExpireNow: remove the lifetime), Flags
//	ClusterID:       Value (the 16-byte id)
//	MemberRemoved:   Key (node id), Value (certificate fingerprints, 32 bytes each)
//
// A TTL of zero means "never expires".
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
	// detection (suspect.go). Each field means one thing for every type.
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

	// MaxKeyLen bounds a stored key of every keyspace: a record key
	// (scope, tenant and the client's key), a token key, a KV key.
	MaxKeyLen = 1024
	// MaxTTL bounds every lifetime and timeout a command carries: an
	// expiry is the state machine's clock plus it, and must never overflow.
	MaxTTL    = 100 * 365 * 24 * time.Hour
	maxFields = 1 << 16
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

// PeekReqID returns the request id of an encoded command without decoding it.
func PeekReqID(encoded []byte) (ReqID, error) {
	var id ReqID
	if !knownVersion(encoded) {
		return id, ErrBadCommand
	}
	copy(id[:], encoded[offReqID:])
	return id, nil
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
	if c.Type == TypeUnknown || c.Type >= typeEnd {
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

// Validate checks the field rules that do not depend on state: what every
// command must satisfy. The proposer calls it before a command reaches the
// log (so bad input is refused with a clear error and costs no Raft round
// trip), and Decode again on every replica.
func (c *Command) Validate() error {
	bad := func(what string) error { return fmt.Errorf("%w: %s: %s", ErrBadCommand, c.Type, what) }
	if c.TTL < 0 || c.Timeout < 0 {
		return bad("negative duration")
	}
	if c.Window < 0 {
		return bad("negative duration")
	}
	if c.TTL > MaxTTL || c.Timeout > MaxTTL || c.Window > MaxTTL {
		return bad(fmt.Sprintf("a lifetime over %s", MaxTTL))
	}
	if len(c.Key) > MaxKeyLen {
		return bad(fmt.Sprintf("key of %d bytes, over %d", len(c.Key), MaxKeyLen))
	}
	switch c.Type {
	case TypeRecordBegin, TypeRecordComplete, TypeRecordRelease, TypeRecordMarkUnknown,
		TypeTokenIssue, TypeTokenConsume, TypeKVSet, TypeKVGetDel, TypeKVDelete, TypeKVIncr, TypeKVExpire:
		if len(c.Key) == 0 {
			return bad("empty key")
		}
	}
	if err := validateCluster(c); err != nil {
		return bad(err.Error())
	}
	switch c.Type {
	case TypeRecordComplete:
		if c.Status < 100 || c.Status > 999 {
			return bad("status out of range")
		}
		if c.Fence == 0 {
			return bad("missing fencing token")
		}
	case TypeRecordMarkUnknown:
		if c.Fence == 0 {
			return bad("missing fencing token")
		}
	case TypeKVSet:
		if c.Mode > SetXX {
			return bad("unknown set mode")
		}
		if c.Flags&^(FlagKeepTTL|FlagReturnOld) != 0 {
			return bad("unknown set flags")
		}
		if c.Flags&FlagKeepTTL != 0 && c.TTL != 0 {
			return bad("a lifetime and keep-lifetime together")
		}
	case TypeKVIncr:
		if _, ok := parseInt(c.Value); !ok {
			return bad("the increment is not a decimal integer")
		}
	case TypeKVExpire:
		if c.Flags&^expireFlags != 0 {
			return bad("unknown expire flags")
		}
		if c.Flags&FlagExpireNow != 0 && c.TTL != 0 {
			return bad("a lifetime and expire-now together")
		}
		if c.Flags&FlagExpireNX != 0 && c.Flags&(FlagExpireXX|FlagExpireGT|FlagExpireLT) != 0 ||
			c.Flags&FlagExpireGT != 0 && c.Flags&FlagExpireLT != 0 {
			return bad("conflicting expire conditions")
		}
	case TypeExpire:
		for _, e := range c.Entries {
			if !e.Kind.Valid() {
				return bad("unknown expiry kind")
			}
		}
	}
	return nil
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
