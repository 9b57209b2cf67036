package fsm

import (
	"bytes"
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// Value conditions: Redis 8.4's compare-and-set and compare-and-delete
// (SET ... IFEQ|IFNE|IFDEQ|IFDNE, DELEX). They guard a state transition
// without a script or a version: SET order:42 PAID IFEQ PROCESSING moves
// an order on only from the state the caller saw, and DELEX lock IFEQ
// token releases a lock only for its holder.

// Digest is a value's digest as Redis's DIGEST computes it: XXH3, 64 bits,
// seed 0 (printed as 16 lowercase hex digits). github.com/zeebo/xxh3 is
// the implementation: its XXH3-64 of "Hello world" is b6acb9d84a38ff74,
// the digest Redis's documentation shows.
func Digest(value []byte) uint64 { return xxh3.Hash(value) }

// valueMatches reports whether a key (old, exists) meets the value
// condition of mode with comparand cond (Command.Body); true for the modes
// that are not value conditions.
func valueMatches(mode SetMode, cond []byte, old KVEntry, exists bool) bool {
	switch mode {
	case SetIfEq:
		return exists && bytes.Equal(old.Value, cond)
	case SetIfNe:
		return !exists || !bytes.Equal(old.Value, cond)
	case SetIfDigestEq:
		return exists && len(cond) == 8 && Digest(old.Value) == binary.BigEndian.Uint64(cond)
	case SetIfDigestNe:
		return !exists || len(cond) != 8 || Digest(old.Value) != binary.BigEndian.Uint64(cond)
	}
	return true
}
