package fsm

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/ttl"
)

func TestDueInExpiryOrder(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "t.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucket(bucketTTL); err != nil {
			return err
		}
		for _, e := range []ttl.Entry{
			{Kind: ttl.KindKV, Key: []byte("c"), At: 30}, {Kind: ttl.KindToken, Key: []byte("a"), At: 10},
			{Kind: ttl.KindRecord, Key: []byte("b"), At: 20}, {Kind: ttl.KindKV, Key: []byte("late"), At: 99},
		} {
			if err := putExpiry(tx, e.Kind, e.Key, e.At); err != nil {
				return err
			}
		}
		return deleteExpiry(tx, ttl.KindKV, []byte("c"), 30)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *bolt.Tx) error {
		due, err := dueExpiries(tx, 50, 10)
		if err != nil || len(due) != 2 || string(due[0].Key) != "a" || due[0].Kind != ttl.KindToken || string(due[1].Key) != "b" {
			t.Fatalf("dueExpiries(50) = %+v, %v; want a then b", due, err)
		}
		if due, _ := dueExpiries(tx, 50, 1); len(due) != 1 {
			t.Fatalf("limit ignored: %+v", due)
		}
		if n, _ := countDueExpiries(tx, 50, 10); n != 2 {
			t.Fatalf("countDueExpiries(50) = %d, want 2", n)
		}
		if n := tx.Bucket(bucketTTL).Stats().KeyN; n != 3 {
			t.Fatalf("%d entries in the index, want 3", n)
		}
		return nil
	})
}
