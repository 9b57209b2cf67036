package fsm

import (
	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// kvExpire changes a key's lifetime, as Redis 7's EXPIRE and PERSIST do:
// c.TTL from now (on the state machine's clock), none when it is zero, or
// at once (FlagExpireNow deletes the key), under the conditions of the
// flags; a key without a lifetime counts as living forever for GT and LT.
// The key's value and version stay: a lifetime is not a write of the value
// (as an etcd lease refresh keeps the mod revision), so a lock holder's
// compare-and-delete still matches after it extends its lock.
// CodeNotFound: no such key; CodeUnchanged: a condition did not hold, or
// there was no lifetime to remove.
func (a *applier) kvExpire(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.kvExpireIn(boltKV{a, tx}, c, rev)
}

func (a *applier) kvExpireIn(kv kvStore, c *command.Command, _ uint64) *command.Result {
	old, exists, err := a.liveKV(kv, c.Key)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if !exists {
		return &command.Result{Code: command.CodeNotFound}
	}
	now := c.Flags&command.FlagExpireNow != 0
	next := a.expiry(c.TTL) // 0: none
	if now {
		next = a.now
	}
	if c.Flags&command.FlagExpireGet != 0 && notString(old, exists) {
		return &command.Result{Code: command.CodeWrongType} // GETEX; a lifetime alone fits any kind
	}
	var value []byte
	if c.Flags&command.FlagExpireGet != 0 {
		value = old.Clone().Value // before a put or delete reuses its memory
	}
	if !expireAllowed(c.Flags, old.ExpiresAt, next) || (!now && c.TTL == 0 && old.ExpiresAt == 0) {
		return &command.Result{Code: command.CodeUnchanged, Version: old.Version, ExpiresAt: old.ExpiresAt, Value: value}
	}
	if now {
		if err := kv.del(c.Key, old); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		return &command.Result{Code: command.CodeOK, Version: old.Version, Value: value}
	}
	e := old.Clone()
	e.ExpiresAt = next
	if err := kv.put(c.Key, &e, old, true); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK, Version: e.Version, ExpiresAt: e.ExpiresAt, Value: value}
}

// expireAllowed applies EXPIRE's conditions to a key expiring at cur (0:
// never) that would expire at next (0: never).
func expireAllowed(flags byte, cur, next int64) bool {
	later := func(x, y int64) bool { // x expires later than y
		if x == 0 {
			return y != 0
		}
		return y != 0 && x > y
	}
	switch {
	case flags&command.FlagExpireNX != 0 && cur != 0:
		return false
	case flags&command.FlagExpireXX != 0 && cur == 0:
		return false
	case flags&command.FlagExpireGT != 0 && !later(next, cur):
		return false
	case flags&command.FlagExpireLT != 0 && !later(cur, next):
		return false
	}
	return true
}

// The applier's rows of this file's commands (commands.go joins them).
var kvExpireApplies = applies{
	command.TypeKVExpire: {remembered: true, apply: (*applier).kvExpire, kv: (*applier).kvExpireIn},
}
