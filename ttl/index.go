package ttl

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Kind says which keyspace an index entry points into.
type Kind byte

// The kinds of expiring entries. Values are part of the on-disk and on-wire
// format: never renumber them.
const (
	KindRecord   Kind = 1 // an idempotency record
	KindToken    Kind = 2 // a form token
	KindKV       Kind = 3 // a key in the KV keyspace
	KindDigest   Kind = 4 // a body digest remembered for suspect detection
	KindOnce     Kind = 5 // a once claim (begin / complete with a lease)
	KindLock     Kind = 6 // a held lock's lease
	KindLockWait Kind = 7 // a queued lock waiter's give-up time
)

// String names the kind as the metrics label does.
func (k Kind) String() string {
	switch k {
	case KindRecord:
		return "record"
	case KindToken:
		return "token"
	case KindKV:
		return "kv"
	case KindDigest:
		return "digest"
	case KindOnce:
		return "once"
	case KindLock:
		return "lock"
	case KindLockWait:
		return "lock_wait"
	}
	return fmt.Sprintf("kind(%d)", byte(k))
}

// Valid reports whether k is one of the known kinds.
func (k Kind) Valid() bool { return k >= KindRecord && k <= KindLockWait }

// Entry is one index entry: the thing of kind Kind stored under Key expires
// at At (unix nanoseconds).
type Entry struct {
	Kind Kind
	Key  []byte
	At   int64
}

// BucketName is the bbolt bucket that holds the index.
var BucketName = []byte("ttl")

const prefixLen = 9

// ErrNoBucket means the index bucket does not exist in the transaction.
var ErrNoBucket = errors.New("ttl: index bucket missing")

func indexKey(kind Kind, key []byte, at int64) []byte {
	k := make([]byte, prefixLen+len(key))
	binary.BigEndian.PutUint64(k, uint64(at))
	k[8] = byte(kind)
	copy(k[prefixLen:], key)
	return k
}

// appendFill is the fill of the index's pages. Its keys start with their
// expiry, and the state machine's clock only grows, so entries arrive in
// order, one stream per lifetime in use: at bbolt's default (0.5) every
// page split in half stays half empty, as the next key goes after it. 0.9,
// as etcd writes its revision-keyed bucket, leaves room for the few that
// come out of order. A property of the bucket handle (one per
// transaction), not of the file: set on every writer's handle.
const appendFill = 0.9

// writable returns the index bucket of a write transaction, set to fill
// its pages as its keys arrive.
func writable(tx *bolt.Tx) (*bolt.Bucket, error) {
	b := tx.Bucket(BucketName)
	if b == nil {
		return nil, ErrNoBucket
	}
	b.FillPercent = appendFill
	return b, nil
}

// Put records that the entry (kind, key) expires at at. It must run inside
// the state machine's write transaction.
func Put(tx *bolt.Tx, kind Kind, key []byte, at int64) error {
	b, err := writable(tx)
	if err != nil {
		return err
	}
	return b.Put(indexKey(kind, key, at), nil)
}

// Delete removes the entry (kind, key, at); removing an absent entry is not
// an error.
func Delete(tx *bolt.Tx, kind Kind, key []byte, at int64) error {
	b, err := writable(tx)
	if err != nil {
		return err
	}
	return b.Delete(indexKey(kind, key, at))
}

// Due returns up to limit entries that expire at or before now, earliest
// first. The returned keys are copies: they outlive the transaction.
func Due(tx *bolt.Tx, now int64, limit int) ([]Entry, error) {
	b := tx.Bucket(BucketName)
	if b == nil {
		return nil, ErrNoBucket
	}
	var out []Entry
	c := b.Cursor()
	for k, _ := c.First(); k != nil && len(out) < limit; k, _ = c.Next() {
		if len(k) < prefixLen {
			continue // not ours; never written by Put
		}
		at := int64(binary.BigEndian.Uint64(k))
		if at > now {
			break
		}
		out = append(out, Entry{
			Kind: Kind(k[8]),
			Key:  append([]byte(nil), k[prefixLen:]...),
			At:   at,
		})
	}
	return out, nil
}

// CountDue counts the entries that expire at or before now, up to limit,
// without copying them.
func CountDue(tx *bolt.Tx, now int64, limit int) (int, error) {
	b := tx.Bucket(BucketName)
	if b == nil {
		return 0, ErrNoBucket
	}
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil && n < limit; k, _ = c.Next() {
		if len(k) < prefixLen {
			continue
		}
		if int64(binary.BigEndian.Uint64(k)) > now {
			break
		}
		n++
	}
	return n, nil
}
