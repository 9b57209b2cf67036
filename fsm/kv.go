package fsm

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/ttl"
)

const (
	kvHeaderLen = 24
	kindShift   = 56
	createdMask = 1<<kindShift - 1
)

// encodeKV is e as stored.
func encodeKV(e *KVEntry) []byte {
	b := make([]byte, kvHeaderLen, kvHeaderLen+len(e.Value))
	binary.BigEndian.PutUint64(b, e.Version)
	binary.BigEndian.PutUint64(b[8:], e.Created&createdMask|uint64(e.Kind)<<kindShift)
	binary.BigEndian.PutUint64(b[16:], uint64(e.ExpiresAt))
	return append(b, e.Value...)
}

// decodeKV parses a stored entry; Value aliases v.
func decodeKV(v []byte) (KVEntry, bool) {
	if len(v) < kvHeaderLen {
		return KVEntry{}, false
	}
	created := binary.BigEndian.Uint64(v[8:])
	return KVEntry{
		Version:   binary.BigEndian.Uint64(v),
		Created:   created & createdMask,
		ExpiresAt: int64(binary.BigEndian.Uint64(v[16:])),
		Kind:      Kind(created >> kindShift),
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
	get(key []byte) (KVEntry, bool)
	// put stores e under key; old is what get returned (exists: whether
	// it did), so an index of expiries can move.
	put(key []byte, e *KVEntry, old KVEntry, exists bool) error
	// del removes key; old is its entry (its expiry and its creation's
	// revision find its entries in the expiry and scan indexes).
	del(key []byte, old KVEntry) error
}

// boltKV is the KV keyspace of a batch's transaction.
type boltKV struct {
	a  *applier
	tx *bolt.Tx
}

func (b boltKV) get(key []byte) (KVEntry, bool) { return decodeKV(b.a.get(b.tx.Bucket(bucketKV), key)) }

func (b boltKV) put(key []byte, e *KVEntry, old KVEntry, exists bool) error {
	return b.a.putKV(b.tx, key, e, old, exists)
}

func (b boltKV) del(key []byte, old KVEntry) error { return b.a.deleteKV(b.tx, key, old) }

// notString: the key exists and holds another kind than a string: the
// commands that read or edit a string's value answer CodeWrongType.
func notString(e KVEntry, exists bool) bool { return exists && e.Kind != KindString }

// liveKV returns the key's entry if it exists at now (Value aliases the
// store's memory); an expired key is deleted on the spot, unless the
// applier only reads (ReadTx).
func (a *applier) liveKV(kv kvStore, key []byte) (KVEntry, bool, error) {
	e, ok := kv.get(key)
	if !ok {
		return KVEntry{}, false, nil
	}
	if e.ExpiresAt != 0 && e.ExpiresAt <= a.now {
		if a.readOnly {
			return KVEntry{}, false, nil // the sweeper, or the next write, removes it
		}
		if err := kv.del(key, e); err != nil {
			return KVEntry{}, false, err
		}
		a.expiredDelta[ttl.KindKV]++
		return KVEntry{}, false, nil
	}
	return e, true, nil
}

// deleteKV removes key, whose stored entry is old.
func (a *applier) deleteKV(tx *bolt.Tx, key []byte, old KVEntry) error {
	if old.ExpiresAt != 0 {
		if err := ttl.Delete(tx, ttl.KindKV, key, old.ExpiresAt); err != nil {
			return err
		}
	}
	a.kvTouched(key)
	if err := unindexKey(tx, key, old.Created); err != nil {
		return err
	}
	return tx.Bucket(bucketKV).Delete(key)
}

func (a *applier) kvSet(tx *bolt.Tx, c *Command, rev uint64) *Result {
	return a.kvSetIn(boltKV{a, tx}, c, rev)
}

func (a *applier) kvSetIn(kv kvStore, c *Command, rev uint64) *Result {
	old, exists, err := a.liveKV(kv, c.Key)
	if err != nil {
		return &Result{Code: CodeStorage}
	}
	if notString(old, exists) && (c.Flags&FlagReturnOld != 0 || c.Mode >= SetIfEq) {
		return &Result{Code: CodeWrongType} // SET replaces any kind, but GET and IFEQ read a string
	}
	switch c.Mode {
	case SetNX:
		if exists {
			r := &Result{Code: CodeExists, Version: old.Version, ExpiresAt: old.ExpiresAt}
			if old.Kind == KindString { // a list's encoding is no value to answer
				r.Value = old.Clone().Value
			}
			return r
		}
	case SetXX:
		if !exists {
			return &Result{Code: CodeNotFound}
		}
	case SetCAS:
		if (c.Version == 0 && exists) || (c.Version != 0 && (!exists || old.Version != c.Version)) {
			r := &Result{Code: CodeVersionMismatch}
			if exists {
				r.Version = old.Version
			}
			return r
		}
	case SetIfEq, SetIfNe, SetIfDigestEq, SetIfDigestNe:
		if !valueMatches(c.Mode, c.Body, old, exists) {
			r := &Result{Code: CodeVersionMismatch}
			if exists {
				r.Version, r.ExpiresAt = old.Version, old.ExpiresAt
				if c.Flags&FlagReturnOld != 0 {
					r.Value = old.Clone().Value
				}
			}
			return r
		}
	}
	e := KVEntry{Version: rev, Created: rev, ExpiresAt: a.expiry(c.TTL), Value: c.Value}
	if c.Flags&FlagKeepTTL != 0 && exists {
		e.ExpiresAt = old.ExpiresAt
	}
	var prev []byte
	if c.Flags&FlagReturnOld != 0 && exists {
		prev = old.Clone().Value // before the Put below reuses its memory
	}
	if err := kv.put(c.Key, &e, old, exists); err != nil {
		return &Result{Code: CodeStorage}
	}
	code := CodeOK
	if !exists {
		code = CodeCreated
	}
	return &Result{Code: code, Version: rev, ExpiresAt: e.ExpiresAt, Value: prev}
}

// putKV stores e under key, moving the key's expiry-index entry from the
// old entry's expiry to e's. Created is kept from old when the key exists;
// a new key's Created places it in the scan index (kv_scan.go).
func (a *applier) putKV(tx *bolt.Tx, key []byte, e *KVEntry, old KVEntry, exists bool) error {
	if exists {
		e.Created = old.Created
		if old.ExpiresAt != 0 && old.ExpiresAt != e.ExpiresAt {
			if err := ttl.Delete(tx, ttl.KindKV, key, old.ExpiresAt); err != nil {
				return err
			}
		}
	}
	if e.ExpiresAt != 0 && (!exists || old.ExpiresAt != e.ExpiresAt) {
		if err := ttl.Put(tx, ttl.KindKV, key, e.ExpiresAt); err != nil {
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
func (a *applier) kvGetDel(tx *bolt.Tx, c *Command, _ uint64) *Result {
	return a.kvRemove(boltKV{a, tx}, c, true)
}

// kvDelete is DEL.
func (a *applier) kvDelete(tx *bolt.Tx, c *Command, _ uint64) *Result {
	return a.kvRemove(boltKV{a, tx}, c, false)
}

func (a *applier) kvGetDelIn(kv kvStore, c *Command, _ uint64) *Result {
	return a.kvRemove(kv, c, true)
}

func (a *applier) kvDeleteIn(kv kvStore, c *Command, _ uint64) *Result {
	return a.kvRemove(kv, c, false)
}

// kvRemove deletes c.Key, answering the removed value if asked; with a
// Version, only while the key is at that version (compare-and-delete: a
// lock released by the holder of its fencing token).
func (a *applier) kvRemove(kv kvStore, c *Command, value bool) *Result {
	old, exists, err := a.liveKV(kv, c.Key)
	if err != nil {
		return &Result{Code: CodeStorage}
	}
	if !exists {
		return &Result{Code: CodeNotFound}
	}
	if notString(old, exists) && (value || c.Mode != SetPlain) { // GETDEL, DELEX's conditions read a string
		return &Result{Code: CodeWrongType}
	}
	if c.Version != 0 && old.Version != c.Version { // compare-and-delete
		return &Result{Code: CodeVersionMismatch, Version: old.Version}
	}
	if !valueMatches(c.Mode, c.Body, old, exists) { // DELEX's value conditions
		return &Result{Code: CodeVersionMismatch, Version: old.Version}
	}
	r := &Result{Code: CodeOK, Version: old.Version}
	if value {
		r.Value = old.Clone().Value
	}
	if err := kv.del(c.Key, old); err != nil {
		return &Result{Code: CodeStorage}
	}
	return r
}

// The applier's rows of this file's commands (commands.go joins them).
var kvApplies = applies{
	TypeKVSet:    {remembered: true, apply: (*applier).kvSet, kv: (*applier).kvSetIn},
	TypeKVGetDel: {remembered: true, apply: (*applier).kvGetDel, kv: (*applier).kvGetDelIn},
	TypeKVDelete: {remembered: true, apply: (*applier).kvDelete, kv: (*applier).kvDeleteIn},
}
