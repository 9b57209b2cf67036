package fsm

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestFillState: a batch's writes are filled to appendFill while all went
// in order, and at bbolt's default from the first that did not on, even
// if later ones go in order again.
func TestFillState(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "f.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		for i, step := range []struct {
			inOrder bool
			want    float64
		}{{true, appendFill}, {true, appendFill}, {false, scatteredFill}, {true, scatteredFill}} {
			if got := wantsOrder(b); got != (i < 3) {
				t.Errorf("step %d: wantsOrder = %v", i, got)
			}
			noteOrder(b, step.inOrder)
			if b.FillPercent != step.want {
				t.Errorf("step %d (in order %v): fill %v, want %v", i, step.inOrder, b.FillPercent, step.want)
			}
		}
		if wantsOrder(b) {
			t.Error("a scattered batch still asks for the order of its writes")
		}
		if tx.Bucket([]byte("b")) != b {
			t.Fatal("bbolt hands out another handle for the same bucket in one transaction: its fill cannot carry the batch's state")
		}
		for _, k := range []string{"b", "d"} {
			if err := b.Put([]byte(k), nil); err != nil {
				return err
			}
		}
		for key, want := range map[string]string{"a": "", "c": "b", "d": "b", "e": "d"} {
			if got := string(predecessor(b.Cursor(), []byte(key))); got != want {
				t.Errorf("predecessor(%q) = %q, want %q", key, got, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
