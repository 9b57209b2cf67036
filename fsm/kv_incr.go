package fsm

import (
	"math"
	"strconv"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// kvIncr adds the increment in c.Value to the key's value, read as a
// signed decimal 64-bit integer (an absent key counts as 0), as Redis's
// INCRBY does: the key keeps its lifetime, and its value becomes the sum in
// decimal. One command, so racing increments never lose one. The result
// carries the new value (decimal) and the key's new version.
func (a *applier) kvIncr(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.kvIncrIn(boltKV{a, tx}, c, rev)
}

func (a *applier) kvIncrIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	delta, ok := command.ParseInt(c.Value)
	if !ok {
		return &command.Result{Code: command.CodeNotInteger}
	}
	old, exists, err := a.liveKV(kv, c.Key)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if notString(old, exists) {
		return &command.Result{Code: command.CodeWrongType}
	}
	var cur int64
	if exists {
		if cur, ok = command.ParseInt(old.Value); !ok {
			return &command.Result{Code: command.CodeNotInteger}
		}
	}
	if (delta > 0 && cur > math.MaxInt64-delta) || (delta < 0 && cur < math.MinInt64-delta) {
		return &command.Result{Code: command.CodeOverflow}
	}
	if lo, hi, _ := command.IncrBounds(c); cur+delta < lo || cur+delta > hi {
		r := &command.Result{Code: command.CodeOutOfRange, Value: strconv.AppendInt(nil, cur, 10)}
		if exists {
			r.Version, r.ExpiresAt = old.Version, old.ExpiresAt
		}
		return r
	}
	e := command.KVEntry{Version: rev, Created: rev, Value: strconv.AppendInt(nil, cur+delta, 10)}
	if exists {
		e.ExpiresAt = old.ExpiresAt
	}
	return a.storeKV(kv, c.Key, &e, old, exists, e.Value)
}

// storeKV stores e, the key's new entry (old before it, if it existed),
// and answers CodeCreated or CodeOK with its version and expiry, and
// value.
func (a *applier) storeKV(kv kvStore, key []byte, e *command.KVEntry, old command.KVEntry, exists bool, value []byte) *command.Result {
	if err := kv.put(key, e, old, exists); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	code := command.CodeOK
	if !exists {
		code = command.CodeCreated
	}
	return &command.Result{Code: code, Version: e.Version, ExpiresAt: e.ExpiresAt, Value: value}
}

// The applier's rows of this file's commands (commands.go joins them).
var kvIncrApplies = applies{
	command.TypeKVIncr: {remembered: true, apply: (*applier).kvIncr, kv: (*applier).kvIncrIn},
}
