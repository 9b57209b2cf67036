package fsm

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

const (
	kvHeaderLen = 24
	kindShift   = 56
	createdMask = 1<<kindShift - 1
)

// encodeKV is e as stored.
func encodeKV(e *command.KVEntry) []byte {
	b := make([]byte, kvHeaderLen, kvHeaderLen+len(e.Value))
	binary.BigEndian.PutUint64(b, e.Version)
	binary.BigEndian.PutUint64(b[8:], e.Created&createdMask|uint64(e.Kind)<<kindShift)
	binary.BigEndian.PutUint64(b[16:], uint64(e.ExpiresAt))
	return append(b, e.Value...)
}

// decodeKV parses a stored entry; Value aliases v.
func decodeKV(v []byte) (command.KVEntry, bool) {
	if len(v) < kvHeaderLen {
		return command.KVEntry{}, false
	}
	created := binary.BigEndian.Uint64(v[8:])
	return command.KVEntry{
		Version:   binary.BigEndian.Uint64(v),
		Created:   created & createdMask,
		ExpiresAt: int64(binary.BigEndian.Uint64(v[16:])),
		Kind:      command.Kind(created >> kindShift),
		Value:     v[kvHeaderLen:],
	}, true
}

// kvStore is where the KV commands' apply functions read and write: the
// batch's bbolt transaction (boltKV), or a script's sandbox (sandbox.go),
// so that what a script's writes answer is computed by the code that
// applies them.
type kvStore interface {
	// get returns the key's stored entry, live or not (Value may alias
	// the store's memory).
	get(key []byte) (command.KVEntry, bool)
	// put stores e under key; old is what get returned (exists: whether
	// it did), so an index of expiries can move.
	put(key []byte, e *command.KVEntry, old command.KVEntry, exists bool) error
	// del removes key; old is its entry (its expiry and its creation's
	// revision find its entries in the expiry and scan indexes), and a
	// collection's elements with it.
	del(key []byte, old command.KVEntry) error

	// The elements of key's collection, whose header is h (coll.go).
	// elem returns field's value (it may alias the store's memory, valid
	// until the next write).
	elem(key []byte, h command.CollHeader, field []byte) ([]byte, bool)
	putElem(key []byte, h command.CollHeader, field, value []byte) error
	delElem(key []byte, h command.CollHeader, field []byte) error
	// elems calls fn with the elements from order from on, in order
	// (ElemOrder, then field), until fn returns false; fn must not write,
	// and its slices are valid during the call only.
	elems(key []byte, h command.CollHeader, from uint64, fn func(order uint64, field, value []byte) bool) error

	// A sorted set's score order (tag 1, zset.go): putScore and delScore
	// write and remove a member's entry (the tag 0 element is putElem's);
	// scores calls fn with the entries from from on (a score key, then a
	// member's bytes; nil: the first, or with rev the last), or with rev
	// those at or before it backwards, until fn returns false.
	putScore(key []byte, h command.CollHeader, score float64, member []byte) error
	delScore(key []byte, h command.CollHeader, score float64, member []byte) error
	scores(key []byte, h command.CollHeader, from []byte, rev bool, fn func(score uint64, member []byte) bool) error

	// A collection's entries of one tag (a stream's, stream_store.go),
	// keyed by k: tagGet's value may alias the store's memory, valid
	// until the next write; tagWalk calls fn with the entries from from
	// on (nil: the first), or with rev those at or before it backwards
	// (nil: from the last), until fn returns false; fn must not write,
	// and its slices are valid during the call only.
	tagGet(key []byte, h command.CollHeader, tag byte, k []byte) ([]byte, bool)
	tagPut(key []byte, h command.CollHeader, tag byte, k, v []byte) error
	tagDel(key []byte, h command.CollHeader, tag byte, k []byte) error
	tagWalk(key []byte, h command.CollHeader, tag byte, from []byte, rev bool, fn func(k, v []byte) bool) error
}

// boltKV is the KV keyspace of a batch's transaction.
type boltKV struct {
	a  *applier
	tx *bolt.Tx
}

func (b boltKV) get(key []byte) (command.KVEntry, bool) {
	return decodeKV(b.a.get(b.tx.Bucket(bucketKV), key))
}

func (b boltKV) put(key []byte, e *command.KVEntry, old command.KVEntry, exists bool) error {
	return b.a.putKV(b.tx, key, e, old, exists)
}

func (b boltKV) del(key []byte, old command.KVEntry) error { return b.a.deleteKV(b.tx, key, old) }

// notString: the key exists and holds another kind than a string: the
// commands that read or edit a string's value answer CodeWrongType.
func notString(e command.KVEntry, exists bool) bool { return exists && e.Kind != command.KindString }

// liveKV returns the key's entry if it exists at now (Value aliases the
// store's memory); an expired key is deleted on the spot, unless the
// applier only reads (ReadTx).
func (a *applier) liveKV(kv kvStore, key []byte) (command.KVEntry, bool, error) {
	e, ok := kv.get(key)
	if !ok {
		return command.KVEntry{}, false, nil
	}
	if e.ExpiresAt != 0 && e.ExpiresAt <= a.now {
		if a.readOnly {
			return command.KVEntry{}, false, nil // the sweeper, or the next write, removes it
		}
		if err := kv.del(key, e); err != nil {
			return command.KVEntry{}, false, err
		}
		a.expiredDelta[ttl.KindKV]++
		return command.KVEntry{}, false, nil
	}
	return e, true, nil
}

// deleteKV removes key, whose stored entry is old, and its elements.
func (a *applier) deleteKV(tx *bolt.Tx, key []byte, old command.KVEntry) error {
	if old.Kind.IsColl() {
		if err := a.dropColl(tx, old); err != nil {
			return err
		}
	}
	return a.removeKey(tx, key, old)
}

// removeKey removes key, whose stored entry is old, but not its elements
// (a RENAME moves them with the header).
func (a *applier) removeKey(tx *bolt.Tx, key []byte, old command.KVEntry) error {
	if old.ExpiresAt != 0 {
		if err := deleteExpiry(tx, ttl.KindKV, key, old.ExpiresAt); err != nil {
			return err
		}
	}
	a.kvTouched(key)
	if err := unindexKey(tx, key, old.Created); err != nil {
		return err
	}
	return tx.Bucket(bucketKV).Delete(key)
}

func (a *applier) kvSet(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.kvSetIn(boltKV{a, tx}, c, rev)
}

func (a *applier) kvSetIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	old, exists, err := a.liveKV(kv, c.Key)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if notString(old, exists) && (c.Flags&command.FlagReturnOld != 0 || c.Mode >= command.SetIfEq) {
		return &command.Result{Code: command.CodeWrongType} // SET replaces any kind, but GET and IFEQ read a string
	}
	switch c.Mode {
	case command.SetNX:
		if exists {
			r := &command.Result{Code: command.CodeExists, Version: old.Version, ExpiresAt: old.ExpiresAt}
			if old.Kind == command.KindString { // a list's encoding is no value to answer
				r.Value = old.Clone().Value
			}
			return r
		}
	case command.SetXX:
		if !exists {
			return &command.Result{Code: command.CodeNotFound}
		}
	case command.SetCAS:
		if (c.Version == 0 && exists) || (c.Version != 0 && (!exists || old.Version != c.Version)) {
			r := &command.Result{Code: command.CodeVersionMismatch}
			if exists {
				r.Version = old.Version
			}
			return r
		}
	case command.SetIfEq, command.SetIfNe, command.SetIfDigestEq, command.SetIfDigestNe:
		if !valueMatches(c.Mode, c.Body, old, exists) {
			r := &command.Result{Code: command.CodeVersionMismatch}
			if exists {
				r.Version, r.ExpiresAt = old.Version, old.ExpiresAt
				if c.Flags&command.FlagReturnOld != 0 {
					r.Value = old.Clone().Value
				}
			}
			return r
		}
	}
	e := command.KVEntry{Version: rev, Created: rev, ExpiresAt: a.expiry(c.TTL), Value: c.Value}
	if c.Flags&command.FlagKeepTTL != 0 && exists {
		e.ExpiresAt = old.ExpiresAt
	}
	var prev []byte
	if c.Flags&command.FlagReturnOld != 0 && exists {
		prev = old.Clone().Value // before the Put below reuses its memory
	}
	if err := kv.put(c.Key, &e, old, exists); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	code := command.CodeOK
	if !exists {
		code = command.CodeCreated
	}
	return &command.Result{Code: code, Version: rev, ExpiresAt: e.ExpiresAt, Value: prev}
}

// putKV stores e under key, moving the key's expiry-index entry from the
// old entry's expiry to e's. Created is kept from old when the key exists;
// a new key's Created places it in the scan index (kv_scan.go).
func (a *applier) putKV(tx *bolt.Tx, key []byte, e *command.KVEntry, old command.KVEntry, exists bool) error {
	if exists {
		e.Created = old.Created
		if old.Kind.IsColl() && !sameColl(e, old) {
			if err := a.dropColl(tx, old); err != nil {
				return err
			}
		}
		if old.ExpiresAt != 0 && old.ExpiresAt != e.ExpiresAt {
			if err := deleteExpiry(tx, ttl.KindKV, key, old.ExpiresAt); err != nil {
				return err
			}
		}
	}
	if e.ExpiresAt != 0 && (!exists || old.ExpiresAt != e.ExpiresAt) {
		if err := putExpiry(tx, ttl.KindKV, key, e.ExpiresAt); err != nil {
			return err
		}
	}
	b := tx.Bucket(bucketKV)
	if wantsOrder(b) {
		// In order: a new key above every key, that is, none at or above
		// it (Seek, not Last: see lastKey).
		above, _ := a.cursor(b).Seek(key)
		noteOrder(b, !exists && above == nil)
	}
	a.kvTouched(key)
	if !exists { // (every write deletes an expired key before it puts a new one: liveKV)
		if err := a.indexKey(tx, key, e.Created); err != nil {
			return err
		}
	}
	return b.Put(key, encodeKV(e))
}

// kvGetDel is GETDEL: it removes the key and answers the value it had.
func (a *applier) kvGetDel(tx *bolt.Tx, c *command.Command, _ uint64) *command.Result {
	return a.kvRemove(boltKV{a, tx}, c, true)
}

// kvDelete is DEL.
func (a *applier) kvDelete(tx *bolt.Tx, c *command.Command, _ uint64) *command.Result {
	return a.kvRemove(boltKV{a, tx}, c, false)
}

func (a *applier) kvGetDelIn(kv kvStore, c *command.Command, _ uint64) *command.Result {
	return a.kvRemove(kv, c, true)
}

func (a *applier) kvDeleteIn(kv kvStore, c *command.Command, _ uint64) *command.Result {
	return a.kvRemove(kv, c, false)
}

// kvRemove deletes c.Key, answering the removed value if asked; with a
// Version, only while the key is at that version (compare-and-delete: a
// lock released by the holder of its fencing token).
func (a *applier) kvRemove(kv kvStore, c *command.Command, value bool) *command.Result {
	old, exists, err := a.liveKV(kv, c.Key)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if !exists {
		return &command.Result{Code: command.CodeNotFound}
	}
	if notString(old, exists) && (value || c.Mode != command.SetPlain) { // GETDEL, DELEX's conditions read a string
		return &command.Result{Code: command.CodeWrongType}
	}
	if c.Version != 0 && old.Version != c.Version { // compare-and-delete
		return &command.Result{Code: command.CodeVersionMismatch, Version: old.Version}
	}
	if !valueMatches(c.Mode, c.Body, old, exists) { // DELEX's value conditions
		return &command.Result{Code: command.CodeVersionMismatch, Version: old.Version}
	}
	r := &command.Result{Code: command.CodeOK, Version: old.Version}
	if value {
		r.Value = old.Clone().Value
	}
	if err := kv.del(c.Key, old); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return r
}

// The applier's rows of this file's commands (commands.go joins them).
var kvApplies = applies{
	command.TypeKVSet:    {remembered: true, apply: (*applier).kvSet, kv: (*applier).kvSetIn},
	command.TypeKVGetDel: {remembered: true, apply: (*applier).kvGetDel, kv: (*applier).kvGetDelIn},
	command.TypeKVDelete: {remembered: true, apply: (*applier).kvDelete, kv: (*applier).kvDeleteIn},
}
