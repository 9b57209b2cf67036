package fsm

import (
	"bytes"
	"encoding/binary"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// The element layer of hashes and sets (package command's coll.go): a
// collection's key holds its header in the KV bucket; its elements are
// entries of the element bucket, under the collection's id:
//
//	id (8) | tag (1) | order (8) | field  ->  value
//
// Every way a header leaves the KV bucket drops its elements (dropColl,
// grave.go: at once, or buried and reclaimed by later entries): deleteKV
// (DEL, a lazy expiry, FLUSH, an emptied collection), putKV over a
// collection by anything but the same collection (SET, RENAME or COPY
// onto it), and the sweeper (expire.go).
// RENAME moves the header alone (removeKey); COPY writes the elements
// again under the copy's id (copyElems).

// bucketElems is the element bucket.
var bucketElems = []byte("kvelems")

// collOf reads the key's collection of kind: its entry and header, or
// exists false; CodeWrongType when the key holds another kind.
func (a *applier) collOf(kv kvStore, key []byte, kind command.Kind) (e command.KVEntry, h command.CollHeader, exists bool, code command.Code) {
	e, exists, err := a.liveKV(kv, key)
	switch {
	case err != nil:
		return e, h, false, command.CodeStorage
	case !exists:
		return e, h, false, command.CodeOK
	case e.Kind != kind:
		return e, h, true, command.CodeWrongType
	}
	h, ok := command.DecodeCollHeader(e.Value)
	if !ok {
		return e, h, true, command.CodeStorage
	}
	return e, h, true, command.CodeOK
}

// newColl is the header of a collection a command at rev creates.
func newColl(rev uint64) command.CollHeader { return command.CollHeader{ID: rev} }

// storeColl writes h as the key's header (the key's old entry old, if
// exists), keeping its lifetime; an empty collection is deleted. value
// is the result's.
func (a *applier) storeColl(kv kvStore, key []byte, kind command.Kind, h command.CollHeader, old command.KVEntry, exists bool, rev uint64, value []byte) *command.Result {
	if h.Count == 0 {
		if exists {
			if err := kv.del(key, old); err != nil {
				return &command.Result{Code: command.CodeStorage}
			}
		}
		return &command.Result{Code: command.CodeOK, Value: value}
	}
	e := command.KVEntry{Version: rev, Created: rev, ExpiresAt: old.ExpiresAt, Kind: kind, Value: h.Encode()}
	return a.storeKV(kv, key, &e, old, exists, value)
}

// dropKey deletes key, whatever it holds, before a store writes a new
// collection there: the result is a new collection, never the old one's
// elements (a sandbox knows a collection by its key).
func (a *applier) dropKey(kv kvStore, key []byte) error {
	old, exists, err := a.liveKV(kv, key)
	if err != nil || !exists {
		return err
	}
	return kv.del(key, old)
}

// elemsBucket is the element bucket of the batch's transaction.
func (b boltKV) elemsBucket() *bolt.Bucket { return b.tx.Bucket(bucketElems) }

func (b boltKV) elem(_ []byte, h command.CollHeader, field []byte) ([]byte, bool) {
	k := command.ElemKey(h.ID, command.TagElem, field)
	ek, v := b.a.cursor(b.elemsBucket()).Seek(k)
	if !bytes.Equal(ek, k) {
		return nil, false
	}
	return v, true
}

func (b boltKV) putElem(_ []byte, h command.CollHeader, field, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	return b.elemsBucket().Put(command.ElemKey(h.ID, command.TagElem, field), value)
}

func (b boltKV) delElem(_ []byte, h command.CollHeader, field []byte) error {
	return b.elemsBucket().Delete(command.ElemKey(h.ID, command.TagElem, field))
}

func (b boltKV) elems(_ []byte, h command.CollHeader, from uint64, fn func(order uint64, field, value []byte) bool) error {
	prefix := command.ElemPrefix(h.ID, command.TagElem, 0)[:9]
	c := b.elemsBucket().Cursor()
	for k, v := c.Seek(command.ElemPrefix(h.ID, command.TagElem, from)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) < 17 {
			continue
		}
		if !fn(binary.BigEndian.Uint64(k[9:17]), k[17:], v) {
			return nil
		}
	}
	return nil
}

// dropElems removes every element of the collection of id id, in one
// apply: dropColl (grave.go) calls it only within an entry's budget.
func dropElems(tx *bolt.Tx, id uint64) error {
	prefix := binary.BigEndian.AppendUint64(nil, id)
	b := tx.Bucket(bucketElems)
	// In chunks, each read before it is deleted: a cursor's Next after a
	// Delete may step over an entry, and a Seek to the prefix after many
	// deletes walks every leaf they emptied (bbolt rebalances at commit),
	// so a collection's delete would cost its size squared; a Seek to
	// the last key deleted lands past them.
	from := prefix
	for {
		last, n, err := deleteFrom(b, prefix, from, dropChunk)
		if err != nil || n < dropChunk {
			return err
		}
		from = last
	}
}

// deleteFrom deletes up to limit keys of b with prefix, from from on,
// each read before any is deleted (dropElems says why), and answers the
// last one deleted and how many.
func deleteFrom(b *bolt.Bucket, prefix, from []byte, limit int) ([]byte, int, error) {
	keys := make([][]byte, 0, min(limit, dropChunk))
	c := b.Cursor()
	for k, _ := c.Seek(from); k != nil && bytes.HasPrefix(k, prefix) && len(keys) < limit; k, _ = c.Next() {
		keys = append(keys, clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return nil, 0, err
		}
	}
	if len(keys) == 0 {
		return nil, 0, nil
	}
	return keys[len(keys)-1], len(keys), nil
}

// dropChunk is how many elements dropElems reads before it deletes them.
const dropChunk = 4096

// copyElems writes every element of the collection of header from again
// under the id of header to.
func copyElems(tx *bolt.Tx, from, to command.CollHeader) error {
	b := tx.Bucket(bucketElems)
	prefix := binary.BigEndian.AppendUint64(nil, from.ID)
	var keys, vals [][]byte
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		nk := binary.BigEndian.AppendUint64(make([]byte, 0, len(k)), to.ID)
		keys, vals = append(keys, append(nk, k[8:]...)), append(vals, clone(v))
	}
	for i := range keys {
		if err := b.Put(keys[i], vals[i]); err != nil {
			return err
		}
	}
	return nil
}

// sameColl reports whether entry e is the collection old is (the same
// id): a write of its header keeps its elements.
func sameColl(e *command.KVEntry, old command.KVEntry) bool {
	if !e.Kind.IsColl() || e.Kind != old.Kind {
		return false
	}
	h, ok1 := command.DecodeCollHeader(e.Value)
	o, ok2 := command.DecodeCollHeader(old.Value)
	return ok1 && ok2 && h.ID == o.ID
}
