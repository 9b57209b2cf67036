package fsm

import (
	"bytes"
	"encoding/binary"
	"time"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// The scan index: Redis's SCAN over a keyspace. A client reads SCAN's
// cursor as a 64-bit number (go-redis, redis-py parse it), which neither a
// key nor a key's prefix can be; and a cursor must mean the same on every
// node and after a restart. So every key of every keyspace is also in an
// index ordered by the revision of the write that created it (KVEntry's
// Created, replicated state like the rest of the entry):
//
//	keyspace (1) | Created (8, big endian) | stored key  ->  (empty)
//
// and a cursor is a revision: SCAN answers the keys from it on, in index
// order, and the next cursor is the revision of the first entry it did
// not look at (0: none is left). A call stops only between two revisions,
// so keys created by one command (a transaction's) are never split across
// calls. A key keeps its entry for as long as it lives (a write to an
// existing key keeps its Created), so a key present for the whole scan is
// answered exactly once, whatever is written meanwhile; a key created
// meanwhile comes after every key there was, and is answered too.
//
// Revisions only grow, so a new key's entry goes at the end of its
// keyspace's range: an append, not an insert at a random place (data
// format 2 ordered the index by a hash of the key, and that random insert
// was most of a new key's cost: BenchmarkApplyAtScale). Deletes go where
// the key's creation was: in order when keys expire in the order they were
// written. The index is maintained where the KV bucket gains or loses a key
// (putKV, deleteKV, the sweeper), in the same transaction. Reserved keys of
// idemgate's own are not in it.

// bucketKVScan is the scan index.
var bucketKVScan = []byte("kvscan")

// scanEntry is the index entry of stored, created at revision created;
// nil for a key not of a keyspace.
func scanEntry(stored []byte, created uint64) []byte {
	db, _, ok := command.KeyspaceOf(stored)
	if !ok {
		return nil
	}
	b := make([]byte, 0, 9+len(stored))
	b = append(b, byte(db))
	b = binary.BigEndian.AppendUint64(b, created)
	return append(b, stored...)
}

// indexKey adds a new stored key, created at revision created, to the scan
// index. Its handle is filled as the KV bucket's (batch.go): in order while
// every entry went at the end of its keyspace.
func (a *applier) indexKey(tx *bolt.Tx, stored []byte, created uint64) error {
	e := scanEntry(stored, created)
	if e == nil {
		return nil
	}
	b := tx.Bucket(bucketKVScan)
	if wantsOrder(b) {
		above, _ := a.cursor(b).Seek(e)
		noteOrder(b, above == nil || above[0] != e[0])
	}
	return b.Put(e, nil)
}

// unindexKey removes a deleted stored key, created at revision created,
// from the scan index.
func unindexKey(tx *bolt.Tx, stored []byte, created uint64) error {
	if e := scanEntry(stored, created); e != nil {
		return tx.Bucket(bucketKVScan).Delete(e)
	}
	return nil
}

// ScanKV looks at up to count entries (at most MaxScanLook) of keyspace
// db's scan index from cursor on, and then at the rest of the last one's
// revision, calling fn with the client's key of each live one and its
// kind; it returns the next cursor, 0 when the keyspace's index is done.
// The key aliases the store's memory only during fn.
func (f *FSM) ScanKV(db int, cursor uint64, count int, now time.Time, fn func(key []byte, kind command.Kind)) (uint64, error) {
	at := f.readNow(now)
	count = min(max(count, 1), command.MaxScanLook)
	var next uint64
	err := f.view(func(tx *bolt.Tx) error {
		kv := tx.Bucket(bucketKV)
		c := tx.Bucket(bucketKVScan).Cursor()
		seek := binary.BigEndian.AppendUint64([]byte{byte(db)}, cursor)
		looked, last := 0, uint64(0)
		for k, _ := c.Seek(seek); k != nil && k[0] == byte(db) && len(k) > 9; k, _ = c.Next() {
			rev := binary.BigEndian.Uint64(k[1:9])
			if looked >= count && rev != last {
				next = rev
				return nil
			}
			looked, last = looked+1, rev
			stored := k[9:]
			if e, ok := decodeKV(kv.Get(stored)); ok && (e.ExpiresAt == 0 || e.ExpiresAt > at) {
				_, key, _ := command.KeyspaceOf(stored)
				fn(key, e.Kind)
			}
		}
		return nil
	})
	return next, err
}

// scanBuildBatch bounds the keys one transaction of buildScanIndex
// indexes (a variable only so that a test can build in many).
var scanBuildBatch = restoreTxPairs

// buildScanIndex fills an empty scan index from the KV bucket (a file of
// data format 1, written before the index, or of format 2, whose index was
// ordered by hash; openDB empties that one and marks the file format 1 in
// one transaction): every stored key of a keyspace, a bounded batch a
// transaction, then the format it holds it in. A stop midway leaves
// format 1, and the next open builds it again (its puts are idempotent);
// the KV bucket is only read.
func buildScanIndex(db *bolt.DB) error {
	defer holdBulkPace()()
	var from []byte
	for {
		done := false
		err := db.Update(func(tx *bolt.Tx) error {
			a := applier{}
			c := tx.Bucket(bucketKV).Cursor()
			n, size := 0, 0
			k, v := c.First()
			if from != nil {
				k, v = c.Seek(from)
			}
			for ; k != nil; k, v = c.Next() {
				if n == scanBuildBatch || size >= restoreTxBytes {
					from = bytes.Clone(k)
					return nil
				}
				e, ok := decodeKV(v)
				if !ok {
					continue
				}
				if err := a.indexKey(tx, k, e.Created); err != nil {
					return err
				}
				n, size = n+1, size+9+len(k)
			}
			done = true
			return tx.Bucket(bucketMeta).Put(keyFormat, currentFormat)
		})
		if err != nil || done {
			return err
		}
	}
}
