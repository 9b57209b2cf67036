package fsm

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// Reads see this replica's applied state. They are as fresh as the caller
// made them: raftstore runs the linearizable read recipe before calling
// them, or calls them directly for the gateway's fast path (a completed
// record never changes until it expires).
//
// Expiry on reads is decided with max(now, the state machine's clock), so an
// expired entry is invisible before the sweeper removes it even when no write
// has moved the state machine's clock. Every value returned is a copy (see
// copy.go): none aliases the transaction's memory.

func (f *FSM) view(fn func(tx *bolt.Tx) error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.db == nil {
		return command.ErrStorage
	}
	if err := f.flush(); err != nil { // the open transaction's entries are applied (commit.go)
		return err
	}
	return f.db.View(fn)
}

// pointView runs fn, a read of a few keys, on a state that holds every
// applied entry: inside the writer, on the open transaction under its
// lock, when one is open (commit.go); else as view. fn must only read,
// and copy what it keeps.
func (f *FSM) pointView(fn func(tx *bolt.Tx) error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.db == nil {
		return command.ErrStorage
	}
	if f.pend.open.Load() {
		f.pend.mu.Lock()
		if f.pend.tx != nil {
			defer f.pend.mu.Unlock()
			return fn(f.pend.tx)
		}
		f.pend.mu.Unlock()
	}
	return f.db.View(fn)
}

func (f *FSM) readNow(now time.Time) int64 {
	n := now.UnixNano()
	if c := f.now.Load(); c > n {
		return c
	}
	return n
}

// Record returns the record stored under key (see RecordKey), with its
// state as seen at now; ErrNotFound when absent or expired.
func (f *FSM) Record(key []byte, now time.Time) (*command.Record, error) {
	at := f.readNow(now)
	var rec *command.Record
	err := f.pointView(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketRecords).Get(key)
		if v == nil {
			return command.ErrNotFound
		}
		r, err := command.DecodeRecord(v)
		if err != nil {
			return err
		}
		if r.ExpiredAt(at) {
			return command.ErrNotFound
		}
		rec = r.Clone()
		rec.State = r.StateAt(at)
		return nil
	})
	return rec, err
}

// KV returns the key's entry; ErrNotFound when absent or expired.
func (f *FSM) KV(key []byte, now time.Time) (command.KVEntry, error) {
	at := f.readNow(now)
	var out command.KVEntry
	err := f.pointView(func(tx *bolt.Tx) error {
		e, ok := decodeKV(tx.Bucket(bucketKV).Get(key))
		if !ok || (e.ExpiresAt != 0 && e.ExpiresAt <= at) {
			return command.ErrNotFound
		}
		out = e.Clone()
		return nil
	})
	return out, err
}

// Due lists up to limit expiry-index entries due at now.
func (f *FSM) Due(now time.Time, limit int) ([]ttl.Entry, error) {
	var out []ttl.Entry
	err := f.view(func(tx *bolt.Tx) error {
		var err error
		out, err = dueExpiries(tx, now.UnixNano(), limit)
		return err
	})
	return out, err
}

// CountDue counts the index entries expired at now, up to limit.
func (f *FSM) CountDue(now time.Time, limit int) (int, error) {
	var n int
	err := f.view(func(tx *bolt.Tx) error {
		var err error
		n, err = countDueExpiries(tx, now.UnixNano(), limit)
		return err
	})
	return n, err
}

// DataHash is a SHA-256 over the keys and values of every bucket but the
// meta bucket (the applied index, the clock, the cluster id), in order:
// equal for a backup's state and the same state restored into a new
// cluster that applied nothing else.
func (f *FSM) DataHash() ([32]byte, error) { return f.hashBuckets(allBuckets[1:]) }

func (f *FSM) hashBuckets(buckets [][]byte) ([32]byte, error) {
	var sum [32]byte
	err := f.view(func(tx *bolt.Tx) error {
		h := sha256.New()
		var n [8]byte
		put := func(b []byte) {
			binary.BigEndian.PutUint64(n[:], uint64(len(b)))
			h.Write(n[:])
			h.Write(b)
		}
		var walk func(b *bolt.Bucket) error
		walk = func(b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				put(k)
				if v == nil { // a nested bucket
					return walk(b.Bucket(k))
				}
				put(v)
				return nil
			})
		}
		for _, name := range buckets {
			put(name)
			if err := walk(tx.Bucket(name)); err != nil {
				return err
			}
		}
		copy(sum[:], h.Sum(nil))
		return nil
	})
	return sum, err
}

// EachKV calls fn with every live KV key from from on (included), in key
// order, until fn returns false: one read transaction, so fn sees one
// state. The key aliases the store's memory only during fn.
func (f *FSM) EachKV(from []byte, now time.Time, fn func(key []byte) bool) error {
	at := f.readNow(now)
	return f.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketKV).Cursor()
		for k, v := c.Seek(from); k != nil; k, v = c.Next() {
			e, ok := decodeKV(v)
			if !ok || (e.ExpiresAt != 0 && e.ExpiresAt <= at) {
				continue
			}
			if !fn(k) {
				return nil
			}
		}
		return nil
	})
}
