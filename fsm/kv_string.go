package fsm

import (
	"encoding/binary"
	"strconv"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// The string edits of Redis that depend on the value they change, each one
// command so that racing edits never lose one: SETRANGE and APPEND
// (kv_setrange), INCRBYFLOAT (kv_incrfloat). Both keep the key's lifetime.

// kvSetRange writes c.Value into the key's value at an offset (Body: the
// offset and the longest the value may become, 8 big-endian bytes each),
// padding with zero bytes, as Redis's SETRANGE does; with FlagRangeAppend
// the offset is the value's length (APPEND). An absent key is an empty
// value; nothing is written for an empty c.Value (but APPEND creates an
// absent key, empty, as Redis does). The result carries the
// value's new length (decimal, in Value); CodeTooLong when it would pass
// the bound, and nothing changed.
func (a *applier) kvSetRange(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.kvSetRangeIn(boltKV{a, tx}, c, rev)
}

func (a *applier) kvSetRangeIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	off, limit := binary.BigEndian.Uint64(c.Body), binary.BigEndian.Uint64(c.Body[8:])
	old, exists, err := a.liveKV(kv, c.Key)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if notString(old, exists) {
		return &command.Result{Code: command.CodeWrongType}
	}
	n := uint64(len(old.Value))
	if c.Flags&command.FlagRangeAppend != 0 {
		off = n
	}
	length := func(n uint64) []byte { return strconv.AppendUint(nil, n, 10) }
	if len(c.Value) == 0 && (exists || c.Flags&command.FlagRangeAppend == 0) { // APPEND of nothing still creates the key
		r := &command.Result{Code: command.CodeOK, Value: length(n)}
		if exists {
			r.Version, r.ExpiresAt = old.Version, old.ExpiresAt
		}
		return r
	}
	if off > limit || uint64(len(c.Value)) > limit-off {
		return &command.Result{Code: command.CodeTooLong}
	}
	v := make([]byte, max(n, off+uint64(len(c.Value))))
	copy(v, old.Value)
	copy(v[off:], c.Value)
	e := command.KVEntry{Version: rev, Created: rev, ExpiresAt: old.ExpiresAt, Value: v}
	return a.storeKV(kv, c.Key, &e, old, exists, length(uint64(len(v))))
}

// kvIncrFloat adds the increment in c.Value to the key's value (absent:
// 0), both read as C's strtold reads them, in the 80-bit long double
// arithmetic of Redis on x86-64 (a 64-bit mantissa), and stores the sum
// as Redis prints it (%.17Lf without trailing zeros), so every replica,
// and Redis, computes the same text. The result carries it (Value);
// CodeNotFloat for a value that is not a number, CodeNotFinite when the
// sum would be infinite or NaN; nothing changed then.
func (a *applier) kvIncrFloat(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.kvIncrFloatIn(boltKV{a, tx}, c, rev)
}

func (a *applier) kvIncrFloatIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	old, exists, err := a.liveKV(kv, c.Key)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if notString(old, exists) {
		return &command.Result{Code: command.CodeWrongType}
	}
	cur := command.NewLongDouble()
	if exists {
		if cur, err = command.ParseLongDouble(old.Value); err != nil {
			return &command.Result{Code: command.CodeNotFloat}
		}
	}
	incr, err := command.ParseLongDouble(c.Value)
	if err != nil {
		return &command.Result{Code: command.CodeNotFloat}
	}
	sum, ok := command.AddLongDouble(cur, incr)
	if !ok {
		return &command.Result{Code: command.CodeNotFinite}
	}
	e := command.KVEntry{Version: rev, Created: rev, ExpiresAt: old.ExpiresAt, Value: command.FormatLongDouble(sum)}
	return a.storeKV(kv, c.Key, &e, old, exists, e.Value)
}

// The applier's rows of this file's commands (commands.go joins them).
var kvStringApplies = applies{
	command.TypeKVSetRange:  {remembered: true, apply: (*applier).kvSetRange, kv: (*applier).kvSetRangeIn},
	command.TypeKVIncrFloat: {remembered: true, apply: (*applier).kvIncrFloat, kv: (*applier).kvIncrFloatIn},
}
