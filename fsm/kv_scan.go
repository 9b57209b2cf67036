package fsm

import (
	"bytes"
	"encoding/binary"
	"time"

	"github.com/zeebo/xxh3"
	bolt "go.etcd.io/bbolt"
)

// The scan index: Redis's SCAN over a keyspace. A client reads SCAN's
// cursor as a 64-bit number (go-redis, redis-py parse it), which neither a
// key nor a key's prefix can be; and a cursor must mean the same on every
// node and after a restart. So every key of every keyspace is also in an
// index ordered by a hash of the client's key:
//
//	keyspace (1) | XXH3-64 of the client's key (8, big endian) | stored key  ->  (empty)
//
// and a cursor is a hash: SCAN answers the keys from it on, in index order,
// and the next cursor is the hash of the first entry it did not look at
// (0: none is left). A call stops only between two hashes, so keys that
// share a hash are never split across calls, and a key present for the
// whole scan is answered at least once, as Redis promises, whatever is
// written meanwhile. The index is maintained where the KV bucket gains or
// loses a key (putKV, deleteKV, the sweeper), in the same transaction; it
// costs one more B-tree insert per new key (BenchmarkSetNXNewKeys).
// Reserved keys of idemgate's own are not in it.

// bucketKVScan is the scan index.
var bucketKVScan = []byte("kvscan")

// scanEntry is key's index entry, nil for a key not of a keyspace.
func scanEntry(stored []byte) []byte {
	db, key, ok := KeyspaceOf(stored)
	if !ok {
		return nil
	}
	b := make([]byte, 0, 9+len(stored))
	b = append(b, byte(db))
	b = binary.BigEndian.AppendUint64(b, xxh3.Hash(key))
	return append(b, stored...)
}

// indexKey adds a new stored key to the scan index.
func indexKey(tx *bolt.Tx, stored []byte) error {
	if e := scanEntry(stored); e != nil {
		return tx.Bucket(bucketKVScan).Put(e, nil)
	}
	return nil
}

// unindexKey removes a deleted stored key from the scan index.
func unindexKey(tx *bolt.Tx, stored []byte) error {
	if e := scanEntry(stored); e != nil {
		return tx.Bucket(bucketKVScan).Delete(e)
	}
	return nil
}

// MaxScanLook bounds the index entries one SCAN call looks at, whatever
// its COUNT: a call's work and reply stay bounded (Redis too may answer
// fewer keys than COUNT, and the cursor goes on from there).
const MaxScanLook = 100000

// ScanKV looks at up to count entries (at most MaxScanLook) of keyspace
// db's scan index from cursor on, and then at the rest of the last one's
// hash, calling fn with the client's key of each live one and its kind;
// it returns the next cursor, 0 when the keyspace's index is done. The key
// aliases the store's memory only during fn.
func (f *FSM) ScanKV(db int, cursor uint64, count int, now time.Time, fn func(key []byte, kind Kind)) (uint64, error) {
	at := f.readNow(now)
	count = min(max(count, 1), MaxScanLook)
	var next uint64
	err := f.view(func(tx *bolt.Tx) error {
		kv := tx.Bucket(bucketKV)
		c := tx.Bucket(bucketKVScan).Cursor()
		seek := binary.BigEndian.AppendUint64([]byte{byte(db)}, cursor)
		looked, last := 0, uint64(0)
		for k, _ := c.Seek(seek); k != nil && k[0] == byte(db) && len(k) > 9; k, _ = c.Next() {
			h := binary.BigEndian.Uint64(k[1:9])
			if looked >= count && h != last {
				next = h
				return nil
			}
			looked, last = looked+1, h
			stored := k[9:]
			if e, ok := decodeKV(kv.Get(stored)); ok && (e.ExpiresAt == 0 || e.ExpiresAt > at) {
				_, key, _ := KeyspaceOf(stored)
				fn(key, e.Kind)
			}
		}
		return nil
	})
	return next, err
}

// buildScanIndex fills the scan index of a file written before it (data
// format 1): every stored key of a keyspace, a bounded batch a
// transaction, then the format it holds it in. A stop midway leaves format
// 1, and the next open builds it again (its puts are idempotent).
func buildScanIndex(db *bolt.DB) error {
	var from []byte
	for {
		done := false
		err := db.Update(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketKV).Cursor()
			n := 0
			k, _ := c.First()
			if from != nil {
				k, _ = c.Seek(from)
			}
			for ; k != nil; k, _ = c.Next() {
				if n == restoreTxPairs {
					from = bytes.Clone(k)
					return nil
				}
				if err := indexKey(tx, k); err != nil {
					return err
				}
				n++
			}
			done = true
			return tx.Bucket(bucketMeta).Put(keyFormat, currentFormat)
		})
		if err != nil || done {
			return err
		}
	}
}
