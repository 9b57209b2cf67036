package fsm

import (
	"bytes"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// kvFlush is one step of Redis's FLUSHDB (keyspace c.Mode) or FLUSHALL
// (FlagFlushAll): it deletes the keyspace's keys written before the flush
// began, at most flushStep keys looked at per entry, so that no entry
// stalls the log however large the keyspace (the state machine applies
// one entry at a time). The first step's revision is the flush's bound
// (c.Version 0: this entry's own): every step deletes only keys whose
// version is older, so a key written while the flush runs, ordered after
// its start, is kept, and the flush ends. Result.Version is the bound,
// Result.Value where the next step begins (empty: done), Result.Fence how
// many keys this step deleted. A keyspace of up to flushStep keys is
// flushed by one entry, atomically; a larger one by a series, between
// which the keys not yet reached are still read. Keys expired but not yet
// swept are deleted with their expiry-index entries. idemgate's own keys
// (package storeapi's reserved keys) are never reached.
func (a *applier) kvFlush(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	bound := c.Version
	if bound == 0 {
		bound = rev
	}
	type doomed struct {
		key []byte
		old command.KVEntry // its expiry and creation (deleteKV)
	}
	var (
		gone   []doomed
		seen   int
		resume []byte
	)
	cur := tx.Bucket(bucketKV).Cursor()
scan:
	for _, s := range flushRanges(int(c.Mode), c.Flags&command.FlagFlushAll != 0) {
		from := s.from
		if bytes.Compare(c.Value, from) > 0 {
			from = c.Value
		}
		for k, v := cur.Seek(from); k != nil && (s.to == nil || bytes.Compare(k, s.to) < 0); k, v = cur.Next() {
			if seen >= flushStep {
				resume = append([]byte(nil), k...)
				break scan
			}
			seen++
			if e, ok := decodeKV(v); ok && e.Version < bound && isKeyspaceKey(k) {
				d := doomed{append([]byte(nil), k...), command.KVEntry{ExpiresAt: e.ExpiresAt, Created: e.Created, Kind: e.Kind}}
				if e.Kind.IsColl() {
					// Its elements go within the entry's budget, or to
					// the graveyard (grave.go): a key, whatever its size.
					d.old.Value = clone(e.Value)
				}
				gone = append(gone, d)
			}
		}
	}
	for _, d := range gone {
		if err := a.deleteKV(tx, d.key, d.old); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
	}
	if c.Version == 0 {
		// A flush's first step tells a client that caches keys to drop
		// everything, as Redis tells it on every flush (an empty keyspace
		// too); the steps after it are told key by key.
		a.kvChangedAll()
	}
	return &command.Result{Code: command.CodeOK, Version: bound, Value: resume, Fence: uint64(len(gone))}
}

// flushStep bounds the keys one flush entry looks at, and so deletes
// (BenchmarkFlushStep: tens of milliseconds on a loaded machine); the
// elements of the collections among them are bounded by the entry's drop
// budget, past which they are buried (grave.go).
const flushStep = 10000

// keyRange is [from, to) of stored keys; to nil: to the end.
type keyRange struct{ from, to []byte }

// flushRanges are the stored keys of keyspace db (every keyspace's when
// all), in key order: another keyspace's are one prefix; keyspace 0's are
// its empty key and every key that does not begin with NUL.
func flushRanges(db int, all bool) []keyRange {
	plain := keyRange{from: []byte{1}}
	if all {
		return []keyRange{{[]byte(keyspaceTag), []byte("\x00dc")}, plain}
	}
	r := keyRange{command.KeyspacePrefix(db), command.KeyspacePrefix(db + 1)}
	if db == 0 {
		return []keyRange{r, plain}
	}
	return []keyRange{r}
}

// The applier's rows of this file's commands (commands.go joins them).
var kvFlushApplies = applies{
	command.TypeKVFlush: {remembered: true, apply: (*applier).kvFlush},
}
