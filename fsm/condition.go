package fsm

import (
	"bytes"
	"encoding/binary"

	"github.com/idemgate/idemgate/command"
)

// Value conditions: Redis 8.4's compare-and-set and compare-and-delete

// valueMatches reports whether a key (old, exists) meets the value
// condition of mode with comparand cond (Command.Body); true for the modes
// that are not value conditions.
func valueMatches(mode command.SetMode, cond []byte, old command.KVEntry, exists bool) bool {
	switch mode {
	case command.SetIfEq:
		return exists && bytes.Equal(old.Value, cond)
	case command.SetIfNe:
		return !exists || !bytes.Equal(old.Value, cond)
	case command.SetIfDigestEq:
		return exists && len(cond) == 8 && command.Digest(old.Value) == binary.BigEndian.Uint64(cond)
	case command.SetIfDigestNe:
		return !exists || len(cond) != 8 || command.Digest(old.Value) != binary.BigEndian.Uint64(cond)
	}
	return true
}
