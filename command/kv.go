package command

import (
	"strconv"

	"github.com/zeebo/xxh3"
)

// KVEntry is a key of the KV keyspace as stored:
//
//	version (8) | kind (1) created (7) | expires (8) | value
//
// Version is the revision of the last write (like etcd's mod revision),
// Created the revision of the write that created the key. A revision is
// unique and increasing across the whole keyspace; for a command that had
// a log entry of its own it is that entry's index (see applier.nextRev).
// Kind is Redis's type of the value (a string, a list: list.go, a hash
// or a set: coll.go); it
// takes the top byte of Created, which a revision never reaches (2^56
// entries), so a string is stored as it always was and reads cost the
// same.
type KVEntry struct {
	Version   uint64
	Created   uint64
	ExpiresAt int64 // unix nanoseconds, 0 = never
	Kind      Kind
	Value     []byte
}

// Kind is the type of a key's value, as Redis's TYPE names it.
type Kind byte

// The kinds. Values are part of the stored format: append only.
const (
	KindString Kind = 0
	KindList   Kind = 1 // Value is a list's encoding (list.go)
	KindHash   Kind = 2 // Value is a collection's header (coll.go)
	KindSet    Kind = 3 // Value is a collection's header (coll.go)
	KindZSet   Kind = 4 // Value is a collection's header (coll.go, zset.go)
	KindStream Kind = 5 // Value is a stream's header (stream.go)
)

// Name is the kind as Redis's TYPE names it ("" for one this build does
// not know).
func (k Kind) Name() string {
	switch k {
	case KindString:
		return "string"
	case KindList:
		return "list"
	case KindHash:
		return "hash"
	case KindSet:
		return "set"
	case KindZSet:
		return "zset"
	case KindStream:
		return "stream"
	}
	return ""
}

// KVObserver is told, after each applied batch commits, the KV keys it
// wrote or removed.
type KVObserver interface {
	// KVWatching reports whether anyone listens now. While no one does, a
	// batch collects nothing (no allocation, one atomic load per batch).
	KVWatching() bool
	// KVChanged is given the keys a batch changed (each may repeat; they
	// alias memory the state machine reuses, valid during the call only)
	// and, for each, the request id of the command that changed it (by[i]
	// for keys[i]: the client's write, a script's effects, a transaction,
	// or the sweeper's expiry), or all: any key may have changed (a
	// snapshot was restored, the keyspace was flushed, or listening began
	// while the batch applied), so every cached value must be dropped. It
	// runs on the apply path: it must be quick, must not block and must
	// not call back into the state machine.
	KVChanged(keys [][]byte, by []ReqID, all bool)
}

// (SET ... IFEQ|IFNE|IFDEQ|IFDNE, DELEX). They guard a state transition
// without a script or a version: SET order:42 PAID IFEQ PROCESSING moves
// an order on only from the state the caller saw, and DELEX lock IFEQ
// token releases a lock only for its holder.

// Digest is a value's digest as Redis's DIGEST computes it: XXH3, 64 bits,
// seed 0 (printed as 16 lowercase hex digits). github.com/zeebo/xxh3 is
// the implementation: its XXH3-64 of "Hello world" is b6acb9d84a38ff74,
// the digest Redis's documentation shows.
func Digest(value []byte) uint64 { return xxh3.Hash(value) }

// MaxScanLook bounds the index entries one SCAN call looks at, whatever
// its COUNT: a call's work and reply stay bounded (Redis too may answer
// fewer keys than COUNT, and the cursor goes on from there).
const MaxScanLook = 100000

// ParseInt reads a signed decimal 64-bit integer as Redis does: no sign
// but '-', no leading zeros, no spaces, at most 20 bytes.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	digits := b
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || (digits[0] == '0' && len(b) > 1) {
		return 0, false
	}
	for _, d := range digits {
		if d < '0' || d > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}
