package fsm

import (
	"bytes"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/ttl"
)

// KVEntry is a key of the KV keyspace as stored:
//
//	version (8) | created (8) | expires (8) | value
//
// Version is the revision of the last write (like etcd's mod revision),
// Created the revision of the write that created the key. A revision is
// unique and increasing across the whole keyspace; for a command that had
// a log entry of its own it is that entry's index (see applier.nextRev).
type KVEntry struct {
	Version   uint64
	Created   uint64
	ExpiresAt int64 // unix nanoseconds, 0 = never
	Value     []byte
}

const kvHeaderLen = 24

func (e *KVEntry) encode() []byte {
	b := make([]byte, kvHeaderLen, kvHeaderLen+len(e.Value))
	binary.BigEndian.PutUint64(b, e.Version)
	binary.BigEndian.PutUint64(b[8:], e.Created)
	binary.BigEndian.PutUint64(b[16:], uint64(e.ExpiresAt))
	return append(b, e.Value...)
}

// decodeKV parses a stored entry; Value aliases v.
func decodeKV(v []byte) (KVEntry, bool) {
	if len(v) < kvHeaderLen {
		return KVEntry{}, false
	}
	return KVEntry{
		Version:   binary.BigEndian.Uint64(v),
		Created:   binary.BigEndian.Uint64(v[8:]),
		ExpiresAt: int64(binary.BigEndian.Uint64(v[16:])),
		Value:     v[kvHeaderLen:],
	}, true
}

// liveKV returns the key's entry if it exists at now (Value aliases the
// transaction's memory); an expired key is deleted on the spot, unless the
// applier only reads (ReadTx).
func (a *applier) liveKV(tx *bolt.Tx, key []byte) (KVEntry, bool, error) {
	e, ok := decodeKV(tx.Bucket(bucketKV).Get(key))
	if !ok {
		return KVEntry{}, false, nil
	}
	if e.ExpiresAt != 0 && e.ExpiresAt <= a.now {
		if a.readOnly {
			return KVEntry{}, false, nil // the sweeper, or the next write, removes it
		}
		if err := a.deleteKV(tx, key, e.ExpiresAt); err != nil {
			return KVEntry{}, false, err
		}
		a.expiredDelta[ttl.KindKV]++
		return KVEntry{}, false, nil
	}
	return e, true, nil
}

func (a *applier) deleteKV(tx *bolt.Tx, key []byte, exp int64) error {
	if exp != 0 {
		if err := ttl.Delete(tx, ttl.KindKV, key, exp); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketKV).Delete(key)
}

func (a *applier) kvSet(tx *bolt.Tx, c *Command, rev uint64) *Result {
	old, exists, err := a.liveKV(tx, c.Key)
	if err != nil {
		return &Result{Code: CodeStorage}
	}
	switch c.Mode {
	case SetNX:
		if exists {
			return &Result{Code: CodeExists, Version: old.Version, ExpiresAt: old.ExpiresAt, Value: old.Clone().Value}
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
	if err := a.putKV(tx, c.Key, &e, old, exists); err != nil {
		return &Result{Code: CodeStorage}
	}
	code := CodeOK
	if !exists {
		code = CodeCreated
	}
	return &Result{Code: code, Version: rev, ExpiresAt: e.ExpiresAt, Value: prev}
}

// putKV stores e under key, moving the key's expiry-index entry from the
// old entry's expiry to e's. Created is kept from old when the key exists.
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
		last, _ := b.Cursor().Last()
		noteOrder(b, !exists && bytes.Compare(key, last) > 0)
	}
	return b.Put(key, e.encode())
}

// kvGetDel is GETDEL: it removes the key and answers the value it had.
func (a *applier) kvGetDel(tx *bolt.Tx, c *Command, _ uint64) *Result { return a.kvRemove(tx, c, true) }

// kvDelete is DEL.
func (a *applier) kvDelete(tx *bolt.Tx, c *Command, _ uint64) *Result {
	return a.kvRemove(tx, c, false)
}

// kvRemove deletes c.Key, answering the removed value if asked; with a
// Version, only while the key is at that version (compare-and-delete: a
// lock released by the holder of its fencing token).
func (a *applier) kvRemove(tx *bolt.Tx, c *Command, value bool) *Result {
	old, exists, err := a.liveKV(tx, c.Key)
	if err != nil {
		return &Result{Code: CodeStorage}
	}
	if !exists {
		return &Result{Code: CodeNotFound}
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
	if err := a.deleteKV(tx, c.Key, old.ExpiresAt); err != nil {
		return &Result{Code: CodeStorage}
	}
	return r
}
