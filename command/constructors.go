package command

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"

	"github.com/idemgate/idemgate/ttl"
)

// The constructors, one per command, in the table's order. Each sets only
// the fields its row uses; the proposer sets the request id and the stamp.
// Byte slices are not copied: the command aliases them until it is encoded.

// NoopCommand changes nothing but the state machine's clock (a leader's
// tick); payload is opaque.
func NoopCommand(payload []byte) *Command { return &Command{Type: TypeNoop, Value: payload} }

// BeginRequest starts an idempotency record.
type BeginRequest struct {
	Key            []byte // RecordKey(scope, tenant, key)
	Fingerprint    []byte
	TTL            time.Duration
	Timeout        time.Duration // processing timeout; 0: none
	ReleaseUnknown bool          // take over a record whose outcome is unknown
	// DigestKey (fsm.DigestKey) turns on suspect detection for this begin:
	// a different record key that began with it within Window is reported
	// in Result.Suspect, or refused (CodeSuspect) with RejectSuspect.
	DigestKey     []byte
	Window        time.Duration
	RejectSuspect bool
}

// RecordBeginCommand is SETNX for an idempotency record: it makes the
// caller the owner (CodeCreated, the fencing token in Result.Fence) or
// answers the existing record (CodeExists, Result.Record); CodeSuspect when
// it refused a suspected duplicate.
func RecordBeginCommand(r BeginRequest) *Command {
	c := &Command{Type: TypeRecordBegin, Key: r.Key, Value: r.Fingerprint, TTL: r.TTL, Timeout: r.Timeout,
		DigestKey: r.DigestKey, Window: r.Window}
	if r.ReleaseUnknown {
		c.Flags |= FlagReleaseUnknown
	}
	if r.RejectSuspect {
		c.Flags |= FlagRejectSuspect
	}
	return c
}

// CompleteRequest stores an owner's response.
type CompleteRequest struct {
	Key         []byte
	Fence       uint64
	Status      int
	Headers     []Header
	Body        []byte
	BodyDropped bool // the body was too large to store: replays cannot be served
}

// RecordCompleteCommand stores the owner's response; CodeFenceMismatch when
// Fence no longer owns the record.
func RecordCompleteCommand(r CompleteRequest) *Command {
	c := &Command{Type: TypeRecordComplete, Key: r.Key, Fence: r.Fence, Status: r.Status, Headers: r.Headers, Body: r.Body}
	if r.BodyDropped {
		c.Flags |= FlagBodyDropped
	}
	return c
}

// RecordReleaseCommand deletes a record so a retry can run. Fence 0
// releases whatever owns it (an operator's release).
func RecordReleaseCommand(key []byte, fence uint64) *Command {
	return &Command{Type: TypeRecordRelease, Key: key, Fence: fence}
}

// ExpireCommand removes the entries a sweeper found due (expire.go).
func ExpireCommand(entries []ttl.Entry) *Command { return &Command{Type: TypeExpire, Entries: entries} }

// TokenIssueCommand stores a new form token under key (TokenKey) for
// lifetime; CodeExists if it is already there.
func TokenIssueCommand(key []byte, lifetime time.Duration) *Command {
	return &Command{Type: TypeTokenIssue, Key: key, TTL: lifetime}
}

// TokenConsumeCommand deletes a live token: exactly one consume succeeds,
// every other is CodeNotFound.
func TokenConsumeCommand(key []byte) *Command { return &Command{Type: TypeTokenConsume, Key: key} }

// KVSetRequest is a KV write with Redis's SET options.
type KVSetRequest struct {
	Key, Value []byte
	TTL        time.Duration // 0: never expires (unless KeepTTL)
	Mode       SetMode       // SetPlain, SetNX, SetXX, SetCAS on Version, or a value condition
	Version    uint64
	KeepTTL    bool // keep the key's lifetime (TTL must be 0)
	ReturnOld  bool // Result.Value is the value before (CodeOK, CodeExists, CodeVersionMismatch: there was one)
	// Match is what SetIfEq and SetIfNe compare the value with; Digest
	// what SetIfDigestEq and SetIfDigestNe compare its digest with.
	Match  []byte
	Digest uint64
}

// KVSetCommand writes a KV key; its refusals are codes: CodeExists (NX,
// with the current value), CodeNotFound (XX), CodeVersionMismatch (CAS).
func KVSetCommand(r KVSetRequest) *Command {
	c := &Command{Type: TypeKVSet, Key: r.Key, Value: r.Value, TTL: r.TTL, Mode: r.Mode, Version: r.Version,
		Body: comparand(r.Mode, r.Match, r.Digest)}
	if r.KeepTTL {
		c.Flags |= FlagKeepTTL
	}
	if r.ReturnOld {
		c.Flags |= FlagReturnOld
	}
	return c
}

// KVGetDelCommand removes a key and answers the value it had
// (CodeNotFound). A non-zero version makes it compare-and-delete: the key
// is removed only at that version (CodeVersionMismatch, with the current
// version, if not).
func KVGetDelCommand(key []byte, version uint64) *Command {
	return &Command{Type: TypeKVGetDel, Key: key, Version: version}
}

// KVDeleteCommand removes a key (CodeNotFound if there is none).
func KVDeleteCommand(key []byte) *Command { return &Command{Type: TypeKVDelete, Key: key} }

// KVDeleteIfCommand removes a key only while its value meets a value
// condition (mode SetIfEq, SetIfNe, SetIfDigestEq or SetIfDigestNe, with
// match or digest as KVSetRequest has them): Redis 8.4's DELEX.
// CodeNotFound for an absent key, CodeVersionMismatch for one whose value
// does not meet it.
func KVDeleteIfCommand(key []byte, mode SetMode, match []byte, digest uint64) *Command {
	return &Command{Type: TypeKVDelete, Key: key, Mode: mode, Body: comparand(mode, match, digest)}
}

// comparand is a value condition's Body: the value, or the digest's 8
// big-endian bytes; nil for the other modes.
func comparand(mode SetMode, match []byte, digest uint64) []byte {
	switch mode {
	case SetIfEq, SetIfNe:
		if match == nil {
			return []byte{} // an empty value is a value: Body is sent as given
		}
		return match
	case SetIfDigestEq, SetIfDigestNe:
		return binary.BigEndian.AppendUint64(nil, digest)
	}
	return nil
}

// KVIncrCommand adds delta to the key's decimal integer value (absent: 0);
// Result.Value is the new value; CodeNotInteger, CodeOverflow.
func KVIncrCommand(key []byte, delta int64) *Command {
	return &Command{Type: TypeKVIncr, Key: key, Value: strconv.AppendInt(nil, delta, 10)}
}

// KVIncrBoundedCommand is KVIncrCommand refused (CodeOutOfRange, nothing
// changed) when the result would leave [min, max]; a nil bound is none.
// The guard of a balance: UPDATE ... SET balance = balance - 100 WHERE
// balance >= 100 is a delta of -100 with min 0.
func KVIncrBoundedCommand(key []byte, delta int64, min, max *int64) *Command {
	c := KVIncrCommand(key, delta)
	if min == nil && max == nil {
		return c
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if min != nil {
		c.Flags, lo = c.Flags|FlagIncrMin, *min
	}
	if max != nil {
		c.Flags, hi = c.Flags|FlagIncrMax, *max
	}
	c.Body = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(lo)), uint64(hi))
	return c
}

// IncrBounds are a guarded increment's bounds (the whole int64 range when
// it has none); false when Body and Flags disagree.
func IncrBounds(c *Command) (lo, hi int64, ok bool) {
	if c.Flags&(FlagIncrMin|FlagIncrMax) == 0 {
		return math.MinInt64, math.MaxInt64, len(c.Body) == 0
	}
	if len(c.Body) != 16 {
		return 0, 0, false
	}
	lo, hi = int64(binary.BigEndian.Uint64(c.Body)), int64(binary.BigEndian.Uint64(c.Body[8:]))
	if c.Flags&FlagIncrMin == 0 {
		lo = math.MinInt64
	}
	if c.Flags&FlagIncrMax == 0 {
		hi = math.MaxInt64
	}
	return lo, hi, true
}

// KVExpireCommand sets the key's lifetime to lifetime from now (0: none,
// PERSIST) under the conditions of flags (FlagExpireNX, ...; FlagExpireNow
// deletes the key; FlagExpireGet answers the value too); CodeNotFound
// without the key, CodeUnchanged when a condition did not hold or there
// was no lifetime to remove.
func KVExpireCommand(key []byte, lifetime time.Duration, flags byte) *Command {
	return &Command{Type: TypeKVExpire, Key: key, TTL: lifetime, Flags: flags}
}

// KVSetRangeCommand writes value into the key's value at offset, padding
// with zero bytes (Redis SETRANGE); Result.Value is the new length, in
// decimal; CodeTooLong when the value would pass limit bytes.
func KVSetRangeCommand(key []byte, offset uint64, value []byte, limit uint64) *Command {
	return &Command{Type: TypeKVSetRange, Key: key, Value: value,
		Body: binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, offset), limit)}
}

// KVAppendCommand appends value to the key's value (Redis APPEND), as
// KVSetRangeCommand does at the value's end.
func KVAppendCommand(key, value []byte, limit uint64) *Command {
	c := KVSetRangeCommand(key, 0, value, limit)
	c.Flags = FlagRangeAppend
	return c
}

// KVIncrFloatCommand adds incr, a number as strtold reads it, to the
// key's value (absent: 0) as Redis's INCRBYFLOAT does; Result.Value is
// the new value; CodeNotFloat, CodeNotFinite.
func KVIncrFloatCommand(key, incr []byte) *Command {
	return &Command{Type: TypeKVIncrFloat, Key: key, Value: incr}
}

// KVRenameCommand moves (RenamePlain, RenameNX) or copies (RenameCopy)
// key src's value and lifetime to dst; CodeNotFound, CodeExists.
func KVRenameCommand(src, dst []byte, mode RenameMode, replace bool) *Command {
	c := &Command{Type: TypeKVRename, Key: src, Value: dst, Mode: SetMode(mode)}
	if replace {
		c.Flags = FlagCopyReplace
	}
	return c
}

// ClusterIDCommand gives the cluster its id, if it has none.
func ClusterIDCommand(id ClusterID) *Command {
	return &Command{Type: TypeClusterID, Value: append([]byte(nil), id[:]...)}
}

// MemberRemovedCommand records node id as removed, with the certificates
// it was seen with.
func MemberRemovedCommand(id string, fps []Fingerprint) *Command {
	v := make([]byte, 0, len(fps)*len(Fingerprint{}))
	for _, fp := range fps {
		v = append(v, fp[:]...)
	}
	return &Command{Type: TypeMemberRemoved, Key: []byte(id), Value: v}
}

// SetMode selects the flavour of TypeKVSet.
type SetMode byte

// The set modes.
const (
	SetPlain SetMode = 0 // unconditional set
	SetNX    SetMode = 1 // only if the key does not exist
	SetCAS   SetMode = 2 // only if the key's version equals Command.Version (0: must not exist)
	SetXX    SetMode = 3 // only if the key exists (fsm.ErrNotFound if not)
	// The value conditions of Redis 8.4's SET IFEQ|IFNE|IFDEQ|IFDNE and
	// DELEX (valueMatches). Command.Body is what they compare with: the
	// value itself, or the value's digest (Digest) as 8 big-endian bytes.
	// Refused: CodeVersionMismatch.
	SetIfEq       SetMode = 4 // only if the key exists and its value is Body
	SetIfNe       SetMode = 5 // only if the key is absent or its value is not Body
	SetIfDigestEq SetMode = 6 // only if the key exists and its value's digest is Body
	SetIfDigestNe SetMode = 7 // only if the key is absent or its value's digest is not Body
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

// KVIncr flags: the bounds of a guarded increment, in Command.Body.
const (
	FlagIncrMin byte = 1 << 0
	FlagIncrMax byte = 1 << 1
)

// KVExpire flags: the conditions of Redis 7's EXPIRE, on the lifetime the
// key has (no lifetime counts as infinite), and expiry at once.
const (
	FlagExpireNX  byte = 1 << 0 // only if the key has no lifetime
	FlagExpireXX  byte = 1 << 1 // only if it has one
	FlagExpireGT  byte = 1 << 2 // only if the new expiry is later
	FlagExpireLT  byte = 1 << 3 // only if the new expiry is earlier
	FlagExpireNow byte = 1 << 4 // the key expires now: it is deleted (TTL must be zero)
	// FlagExpireGet: the result carries the key's value, changed or not
	// (Redis's GETEX), in Result.Value.
	FlagExpireGet byte = 1 << 5
	expireFlags        = FlagExpireNX | FlagExpireXX | FlagExpireGT | FlagExpireLT | FlagExpireNow | FlagExpireGet
)

// KVSetRange flags.
const (
	// FlagRangeAppend: the offset is the value's length (Redis APPEND).
	FlagRangeAppend byte = 1 << 0
)

// Complete flags.
const (
	// FlagBodyDropped: the response body was too large to store; replays
	// cannot be served.
	FlagBodyDropped byte = 1 << 0
)
