package fsm

import (
	"bytes"
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// Suspected duplicates: two begins on one route and tenant with different
// idempotency keys but the same body digest within a window — a client that
// made a new key for its retry, which no key can deduplicate.
// The begin that creates a record remembers its digest key:
//
//	digests: digest key -> expiry (8) | record key
//
// and a later creating begin under another record key within the window is
// a suspect. Suspects are logged in replicated state, so every node lists
// the same ones:
//
//	suspects: revision (8) -> at (8) | record key (len-prefixed) | earlier record key
//
// The log keeps SuspectLogRetention of the state machine's clock.

// SuspectLogRetention is how long suspects stay listed.
const SuspectLogRetention = 24 * time.Hour

// checkDigest looks up the begin's digest key, remembers this record key
// under it, and returns the earlier record key if this begin is a suspect.
func (a *applier) checkDigest(tx *bolt.Tx, c *command.Command, rev uint64) ([]byte, error) {
	b := tx.Bucket(bucketDigests)
	var suspect []byte
	if v := b.Get(c.DigestKey); len(v) >= 8 {
		exp := int64(getUint64(v[:8]))
		if exp > a.now && !bytes.Equal(v[8:], c.Key) {
			suspect = clone(v[8:])
		}
		if err := deleteExpiry(tx, ttl.KindDigest, c.DigestKey, exp); err != nil {
			return nil, err
		}
	}
	if suspect != nil {
		if err := a.logSuspect(tx, c.Key, suspect, rev); err != nil {
			return nil, err
		}
		if c.Flags&command.FlagRejectSuspect != 0 {
			return suspect, nil // refused: the earlier key stays remembered
		}
	}
	window := int64(c.Window)
	if window <= 0 {
		return suspect, nil
	}
	exp := a.now + window
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(c.Key)), uint64(exp))
	if err := b.Put(c.DigestKey, append(v, c.Key...)); err != nil {
		return nil, err
	}
	return suspect, putExpiry(tx, ttl.KindDigest, c.DigestKey, exp)
}

func (a *applier) logSuspect(tx *bolt.Tx, key, earlier []byte, rev uint64) error {
	b := tx.Bucket(bucketSuspect)
	b.FillPercent = appendFill // keyed by revision: always appended (batch.go)
	// Forget up to two expired entries per new one: bounded work per command.
	cur := b.Cursor()
	for i := 0; i < 2; i++ {
		k, v := cur.First()
		if k == nil || len(v) < 8 || int64(getUint64(v[:8])) >= a.now-int64(SuspectLogRetention) {
			break
		}
		if err := cur.Delete(); err != nil {
			return err
		}
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(a.now))
	v = appendBytes(v, key)
	v = append(v, earlier...)
	return b.Put(binary.BigEndian.AppendUint64(nil, rev), v)
}

// Suspects lists up to limit logged suspects, newest first.
func (f *FSM) Suspects(limit int) ([]command.Suspect, error) {
	var out []command.Suspect
	err := f.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketSuspect).Cursor()
		for k, v := c.Last(); k != nil && len(out) < limit; k, v = c.Prev() {
			if len(v) < 8 {
				continue
			}
			r := reader{b: v[8:]}
			key := r.bytes()
			if r.err != nil {
				continue
			}
			out = append(out, command.Suspect{At: int64(getUint64(v[:8])), Key: key, Earlier: r.b}.Clone())
		}
		return nil
	})
	return out, err
}
