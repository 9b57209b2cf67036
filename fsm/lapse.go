package fsm

import (
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// Lapses: the deadlines a holder must beat, so that work left behind is
// found without scanning every record and claim. A gateway record in flight
// lapses at its processing deadline (then it is unknown: its client's
// request may or may not have reached the upstream); a begun once claim at
// its lease's end (its holder crashed or stalled, and nobody took over or
// completed it yet). The index holds one entry per in-flight record and per
// begun claim:
//
//	lapses: at (8) | kind (1) | key -> nothing (expiryKey's layout)
//
// kept in the write that moves the record or claim, so it is replicated
// state like the rest. An entry at or before now is stuck work for
// reconciliation (GET /v1/stuck); it leaves the index when the record is
// completed, released, taken over or removed, and the claim likewise.
var bucketLapses = []byte("lapses")

// lapses returns the index of a write transaction, made when a file from
// before it lacks it.
func lapses(tx *bolt.Tx) (*bolt.Bucket, error) {
	b, err := tx.CreateBucketIfNotExists(bucketLapses)
	if err != nil {
		return nil, err
	}
	b.FillPercent = appendFill // keyed by deadline: mostly appended (batch.go)
	return b, nil
}

// setLapse moves (kind, key)'s entry from old to at; 0 is none.
func setLapse(tx *bolt.Tx, kind ttl.Kind, key []byte, old, at int64) error {
	if old == at {
		return nil
	}
	b, err := lapses(tx)
	if err != nil {
		return err
	}
	if old != 0 {
		if err := b.Delete(expiryKey(kind, key, old)); err != nil {
			return err
		}
	}
	if at != 0 {
		return b.Put(expiryKey(kind, key, at), nil)
	}
	return nil
}

// recordLapse is when rec lapses: its deadline while in flight, else never.
func recordLapse(rec *command.Record) int64 {
	if rec == nil || rec.State != command.StateInFlight {
		return 0
	}
	return rec.Deadline
}

// claimLapse is when c lapses: its lease's end while begun, else never.
func claimLapse(c *command.Claim) int64 {
	if c == nil || c.State != command.ClaimBegun {
		return 0
	}
	return c.LeaseEnd
}

// Stuck lists, earliest deadline first, up to limit (at most MaxStuckPage)
// records and claims whose deadline passed by now (the state machine's
// clock, or now when it is later), from the index key after on (nil: the
// first); next is the cursor of the page after, nil when none is left.
func (f *FSM) Stuck(now time.Time, after []byte, limit int) (out []command.Stuck, next []byte, err error) {
	at := f.readNow(now)
	limit = max(1, min(limit, command.MaxStuckPage))
	err = f.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLapses)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		k, _ := c.First()
		if after != nil {
			if k, _ = c.Seek(after); k != nil && string(k) == string(after) {
				k, _ = c.Next()
			}
		}
		for ; k != nil && len(k) >= 9 && int64(getUint64(k[:8])) <= at; k, _ = c.Next() {
			if len(out) == limit {
				next = clone(stuckIndexKey(out[len(out)-1]))
				return nil
			}
			out = append(out, command.Stuck{Kind: ttl.Kind(k[8]), Key: clone(k[9:]), At: int64(getUint64(k[:8]))})
		}
		return nil
	})
	return out, next, err
}

// stuckIndexKey is s's key in the index: the cursor after it.
func stuckIndexKey(s command.Stuck) []byte { return expiryKey(s.Kind, s.Key, s.At) }

// CountStuck counts the records and the claims whose deadline passed by
// now, visiting at most limit index entries: bounded work for a gauge,
// whose counts stop at limit between them.
func (f *FSM) CountStuck(now time.Time, limit int) (records, claims int, err error) {
	at := f.readNow(now)
	err = f.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLapses)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil && len(k) >= 9 && int64(getUint64(k[:8])) <= at && records+claims < limit; k, _ = c.Next() {
			switch ttl.Kind(k[8]) {
			case ttl.KindRecord:
				records++
			case ttl.KindOnce:
				claims++
			}
		}
		return nil
	})
	return records, claims, err
}
