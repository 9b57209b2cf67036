package command

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// State is an idempotency record's state.
type State byte

// The record states. Values are stored on disk: never renumber them.
const (
	StateInFlight  State = 1 // begun; its owner is calling the upstream
	StateCompleted State = 2 // the response is stored
	StateUnknown   State = 3 // its processing deadline passed (StateAt)
)

func (s State) String() string {
	switch s {
	case StateInFlight:
		return "in_flight"
	case StateCompleted:
		return "completed"
	case StateUnknown:
		return "unknown"
	}
	return fmt.Sprintf("state(%d)", byte(s))
}

// Record is one idempotency record: who owns a (scope, tenant, key) and,
// once complete, the response to replay. Times are unix nanoseconds of the
// state machine's clock; 0 means unset.
type Record struct {
	State       State
	Fence       uint64 // the owner's fencing token (the revision of its begin)
	Fingerprint []byte
	CreatedAt   int64
	UpdatedAt   int64
	ExpiresAt   int64 // 0: never
	Deadline    int64 // processing deadline; 0: none
	Status      int
	BodyDropped bool // the body was over the route's limit and was not stored
	Headers     []Header
	Body        []byte
	// Sum is the stored response's checksum (ResponseSum), set by the
	// state machine when it applies the complete; HasSum says there is one
	// (a completed record written before checksums has none, and is
	// replayed unchecked). Verify compares them.
	Sum    uint32
	HasSum bool
}

// StateAt is the record's state as seen at now: an in-flight record whose
// processing deadline has passed has an unknown outcome.
func (r *Record) StateAt(now int64) State {
	if r.State == StateInFlight && r.Deadline != 0 && r.Deadline <= now {
		return StateUnknown
	}
	return r.State
}

// ExpiredAt reports whether the record no longer exists at now.
func (r *Record) ExpiredAt(now int64) bool { return r.ExpiresAt != 0 && r.ExpiresAt <= now }

// Record encodings. Version 2 is version 1 followed by the 4-byte Sum; a
// record without a sum (in flight, unknown, or completed by a build before
// checksums) is written as version 1, so that a build that knows only
// version 1 reads it, and both decode.
const (
	recordVersion    = 1
	recordVersionSum = 2
)

// castagnoli is CRC-32C's table: the checksum's job is to catch a damaged
// disk or page, not an adversary (who could rewrite the sum as well), and
// CRC-32C catches every burst of up to 32 flipped bits, any odd number of
// them, and all else but 1 in 2^32; it runs in hardware (SSE4.2, ARMv8) on
// every replica's apply path, where a cryptographic hash would cost ~10x.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ResponseSum is the CRC-32C of what a replay writes and what decides
// whether it is written: the fingerprint, the status, whether the body was
// dropped, the headers and the body, each length-prefixed so that no two
// records share an input.
func (r *Record) ResponseSum() uint32 {
	var n [binary.MaxVarintLen64]byte
	sum := uint32(0)
	uvarint := func(v uint64) { sum = crc32.Update(sum, castagnoli, binary.AppendUvarint(n[:0], v)) }
	field := func(b []byte) {
		uvarint(uint64(len(b)))
		sum = crc32.Update(sum, castagnoli, b)
	}
	field(r.Fingerprint)
	uvarint(uint64(r.Status))
	if r.BodyDropped {
		uvarint(1)
	} else {
		uvarint(0)
	}
	uvarint(uint64(len(r.Headers)))
	for _, h := range r.Headers {
		field(h.Name)
		field(h.Value)
	}
	field(r.Body)
	return sum
}

// Verify reports ErrDamaged when the record carries a checksum its
// response does not match: its bytes changed after the state machine
// stored them (a damaged disk, a stray write). A record without a checksum
// passes. The state machine itself never verifies: damage is one replica's
// own, and a command whose effect depended on it would make replicas
// diverge. Readers that replay verify (the gateway, once per record).
func (r *Record) Verify() error {
	if !r.HasSum {
		return nil
	}
	if got := r.ResponseSum(); got != r.Sum {
		return fmt.Errorf("%w: stored response checksum %08x, computed %08x", ErrDamaged, r.Sum, got)
	}
	return nil
}

// Encode appends the record's encoding to dst.
func (r *Record) Encode(dst []byte) []byte {
	flags := byte(0)
	if r.BodyDropped {
		flags |= FlagBodyDropped
	}
	version := byte(recordVersion)
	if r.HasSum {
		version = recordVersionSum
	}
	dst = append(dst, version, byte(r.State), flags)
	dst = binary.AppendUvarint(dst, r.Fence)
	dst = appendBytes(dst, r.Fingerprint)
	dst = binary.AppendVarint(dst, r.CreatedAt)
	dst = binary.AppendVarint(dst, r.UpdatedAt)
	dst = binary.AppendVarint(dst, r.ExpiresAt)
	dst = binary.AppendVarint(dst, r.Deadline)
	dst = binary.AppendUvarint(dst, uint64(r.Status))
	dst = binary.AppendUvarint(dst, uint64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = appendBytes(dst, h.Name)
		dst = appendBytes(dst, h.Value)
	}
	dst = appendBytes(dst, r.Body)
	if r.HasSum {
		dst = binary.BigEndian.AppendUint32(dst, r.Sum)
	}
	return dst
}

// DecodeRecord parses an encoded record. Its slices alias b: copy b first
// when it is memory of a bbolt transaction that will end.
func DecodeRecord(b []byte) (*Record, error) {
	rd := reader{b: b}
	v := rd.byte()
	if v != recordVersion && v != recordVersionSum && rd.err == nil {
		return nil, fmt.Errorf("%w: record version %d", ErrBadCommand, v)
	}
	r := &Record{State: State(rd.byte())}
	r.BodyDropped = rd.byte()&FlagBodyDropped != 0
	r.Fence = rd.uvarint()
	r.Fingerprint = rd.bytes()
	r.CreatedAt = rd.varint()
	r.UpdatedAt = rd.varint()
	r.ExpiresAt = rd.varint()
	r.Deadline = rd.varint()
	r.Status = int(rd.uvarint())
	if n := rd.count(); n > 0 {
		r.Headers = make([]Header, n)
		for i := range r.Headers {
			r.Headers[i] = Header{Name: rd.bytes(), Value: rd.bytes()}
		}
	}
	r.Body = rd.bytes()
	if v == recordVersionSum {
		r.Sum, r.HasSum = rd.uint32(), true
	}
	if rd.err != nil {
		return nil, fmt.Errorf("%w: record: %v", ErrBadCommand, rd.err)
	}
	if len(rd.b) != 0 {
		return nil, fmt.Errorf("%w: record: trailing bytes", ErrBadCommand)
	}
	if r.State < StateInFlight || r.State > StateUnknown {
		return nil, fmt.Errorf("%w: record state %d", ErrBadCommand, r.State)
	}
	return r, nil
}

// RecordKey builds the stored key of a record: scope, tenant and the client's
// key, separated by NUL bytes (none of the three may contain one).
func RecordKey(scope, tenant, key string) []byte {
	return AppendRecordKey(make([]byte, 0, len(scope)+len(tenant)+len(key)+2), scope, []byte(tenant), []byte(key))
}

// AppendRecordKey appends RecordKey's layout to dst: the gateway builds
// record keys in a stack buffer with it, so a replay allocates nothing.
func AppendRecordKey(dst []byte, scope string, tenant, key []byte) []byte {
	dst = append(dst, scope...)
	dst = append(dst, 0)
	dst = append(dst, tenant...)
	dst = append(dst, 0)
	return append(dst, key...)
}

// DigestKey builds the key under which a begin remembers its body digest
// for suspect detection: RecordKey's layout, with the digest for the key.
func DigestKey(scope, tenant string, digest []byte) []byte {
	return AppendRecordKey(nil, scope, []byte(tenant), digest)
}

// TokenKey builds the stored key of a form token.
func TokenKey(scope, token string) []byte {
	b := make([]byte, 0, len(scope)+len(token)+1)
	b = append(b, scope...)
	b = append(b, 0)
	return append(b, token...)
}
