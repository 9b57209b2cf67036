package fsm

import (
	"bytes"
	"encoding/binary"
)

// Value conditions: Redis 8.4's compare-and-set and compare-and-delete

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
