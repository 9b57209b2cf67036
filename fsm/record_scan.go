package fsm

import (
	"bytes"
	"fmt"
	"time"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// ScanRecords visits, in key order, the records whose key starts with
// prefix, from the key from on (nil: the first), at most max of them, in
// one read transaction, and returns the key to resume from (nil when none
// is left). Expired records are skipped; a record's state is the one seen
// at now (StateAt). fn's key and record alias the transaction's memory and
// are valid only until fn returns.
//
// A whole export is many calls, each a short transaction, rather than one
// that lasts as long as the reader is slow: an open bbolt read transaction
// holds the pages it sees from reuse and blocks the file's remapping when
// it grows, which would stall every write of the node behind one slow
// download.
func (f *FSM) ScanRecords(prefix, from []byte, now time.Time, max int, fn func(key []byte, r *command.Record) error) ([]byte, error) {
	at := f.readNow(now)
	max = min(max, 1<<20)
	if max < 1 {
		max = 1 // never a chunk that makes no progress
	}
	if from == nil || bytes.Compare(from, prefix) < 0 {
		from = prefix
	}
	var next []byte
	err := f.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRecords).Cursor()
		n := 0
		for k, v := c.Seek(from); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if n == max {
				next = clone(k)
				return nil
			}
			n++
			r, err := command.DecodeRecord(v)
			if err != nil {
				return fmt.Errorf("record %q: %w", k, err)
			}
			if r.ExpiredAt(at) {
				continue
			}
			r.State = r.StateAt(at)
			if err := fn(k, r); err != nil {
				return err
			}
		}
		return nil
	})
	return next, err
}
