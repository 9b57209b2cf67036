package fsm

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestPrevPastEmptyLeaves: keys 0..9999 committed, then, in one write
// transaction, 2000..7999 deleted (whole leaves emptied, not yet
// rebalanced). From 8000 back, Cursor.Prev stops on an empty leaf with a
// nil key; prev answers 1999, and nil only below the walk's floor.
func TestPrevPastEmptyLeaves(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "leaves.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := func(i int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(i)) }
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		for i := 0; err == nil && i < 10000; i++ {
			err = b.Put(key(i), make([]byte, 64))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("b"))
		for i := 2000; i < 8000; i++ {
			if err := b.Delete(key(i)); err != nil {
				return err
			}
		}
		c := b.Cursor()
		c.Seek(key(8000))
		raw, _ := c.Prev()
		c.Seek(key(8000))
		k, _ := prev(c, key(0), key(8000))
		if string(k) != string(key(1999)) {
			t.Errorf("prev from 8000 = %x, want 1999 (Cursor.Prev answered %x)", k, raw)
		}
		if raw != nil {
			t.Logf("Cursor.Prev answered %x: bbolt no longer stops on empty leaves", raw)
		}
		c.Seek(key(8000))
		if k, _ := prev(c, key(5000), key(8000)); k != nil {
			t.Errorf("prev from 8000 with the floor at 5000 = %x, want nil", k)
		}
		// A walk back from 1999 meets each key once, in order.
		c.Seek(key(1999))
		n := 1
		for k, _ := prev(c, key(0), key(1999)); k != nil; k, _ = prev(c, key(0), k) {
			n++
		}
		if n != 2000 {
			t.Errorf("walked back %d keys from 1999, want 2000", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
