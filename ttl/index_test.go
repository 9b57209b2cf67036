package ttl

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestDueInExpiryOrder(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "t.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucket(BucketName); err != nil {
			return err
		}
		for _, e := range []Entry{{KindKV, []byte("c"), 30}, {KindToken, []byte("a"), 10}, {KindRecord, []byte("b"), 20}, {KindKV, []byte("late"), 99}} {
			if err := Put(tx, e.Kind, e.Key, e.At); err != nil {
				return err
			}
		}
		return Delete(tx, KindKV, []byte("c"), 30)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *bolt.Tx) error {
		due, err := Due(tx, 50, 10)
		if err != nil || len(due) != 2 || string(due[0].Key) != "a" || due[0].Kind != KindToken || string(due[1].Key) != "b" {
			t.Fatalf("Due(50) = %+v, %v; want a then b", due, err)
		}
		if due, _ := Due(tx, 50, 1); len(due) != 1 {
			t.Fatalf("limit ignored: %+v", due)
		}
		if indexLen(tx) != 3 {
			t.Fatalf("Len = %d, want 3", indexLen(tx))
		}
		return nil
	})
}

// indexLen is the number of entries in the index.
func indexLen(tx *bolt.Tx) int {
	b := tx.Bucket(BucketName)
	if b == nil {
		return 0
	}
	return b.Stats().KeyN
}
