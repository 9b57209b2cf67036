package fsm

import (
	"encoding/binary"
	"errors"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/ttl"
)

// The expiry index: what expires when, one bucket whose keys sort by
// expiry time,
//
//	ttl: at (8 bytes, big-endian unix nanoseconds) | kind (1) | entry key -> nothing
//
// so the entries due at a given time are a prefix scan (lapse.go's index
// has the same layout). It is written only in the write that gives a thing
// its expiry or takes it away, so it is replicated and deterministic like
// everything else here. Nothing here removes what is due: the leader's
// sweeper (package ttl) lists it (Due) and proposes an expire command.
var bucketTTL = []byte("ttl")

// expiryPrefixLen is the length of an index key before the entry key.
const expiryPrefixLen = 9

// errNoTTLBucket: the index bucket does not exist in the transaction.
var errNoTTLBucket = errors.New("fsm: expiry index bucket missing")

// expiryKey is the index key of (kind, key) expiring at at.
func expiryKey(kind ttl.Kind, key []byte, at int64) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, expiryPrefixLen+len(key)), uint64(at))
	return append(append(k, byte(kind)), key...)
}

// expiries returns the index bucket of a write transaction, its pages
// filled as its keys arrive: they start with their expiry, and the state
// machine's clock only grows, so entries arrive in order, one stream per
// lifetime in use (appendFill, batch.go). A property of the bucket handle
// (one per transaction), not of the file: set on every writer's handle.
func expiries(tx *bolt.Tx) (*bolt.Bucket, error) {
	b := tx.Bucket(bucketTTL)
	if b == nil {
		return nil, errNoTTLBucket
	}
	b.FillPercent = appendFill
	return b, nil
}

// putExpiry records that the entry (kind, key) expires at at.
func putExpiry(tx *bolt.Tx, kind ttl.Kind, key []byte, at int64) error {
	b, err := expiries(tx)
	if err != nil {
		return err
	}
	return b.Put(expiryKey(kind, key, at), nil)
}

// deleteExpiry removes the entry (kind, key, at); removing an absent entry
// is not an error.
func deleteExpiry(tx *bolt.Tx, kind ttl.Kind, key []byte, at int64) error {
	b, err := expiries(tx)
	if err != nil {
		return err
	}
	return b.Delete(expiryKey(kind, key, at))
}

// dueExpiries returns up to limit entries that expire at or before now,
// earliest first. The returned keys are copies: they outlive the
// transaction.
func dueExpiries(tx *bolt.Tx, now int64, limit int) ([]ttl.Entry, error) {
	var out []ttl.Entry
	err := walkDue(tx, now, limit, func(k []byte) {
		out = append(out, ttl.Entry{
			Kind: ttl.Kind(k[8]),
			Key:  append([]byte(nil), k[expiryPrefixLen:]...),
			At:   int64(binary.BigEndian.Uint64(k)),
		})
	})
	return out, err
}

// countDueExpiries counts the entries that expire at or before now, up to
// limit, without copying them.
func countDueExpiries(tx *bolt.Tx, now int64, limit int) (int, error) {
	n := 0
	err := walkDue(tx, now, limit, func([]byte) { n++ })
	return n, err
}

// walkDue calls fn with the index keys of up to limit entries that expire
// at or before now, earliest first (each valid only during the call).
func walkDue(tx *bolt.Tx, now int64, limit int, fn func(k []byte)) error {
	b := tx.Bucket(bucketTTL)
	if b == nil {
		return errNoTTLBucket
	}
	c, n := b.Cursor(), 0
	for k, _ := c.First(); k != nil && n < limit; k, _ = c.Next() {
		if len(k) < expiryPrefixLen {
			continue // not ours; never written by putExpiry
		}
		if int64(binary.BigEndian.Uint64(k)) > now {
			break
		}
		fn(k)
		n++
	}
	return nil
}
