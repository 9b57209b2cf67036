package fsm

import (
	"bytes"
	"io"
	"runtime/debug"
	"testing"

	"github.com/idemgate/idemgate/command"
)

// TestBulkPace: bulk work holds the collector at Go's default pace while
// it runs, nested or not, and puts back whatever pace was in force; a
// faster pace, or the collector off, is left as it is.
func TestBulkPace(t *testing.T) {
	orig := debug.SetGCPercent(400)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	pace := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }

	outer := holdBulkPace()
	inner := holdBulkPace()
	if p := pace(); p != bulkPace {
		t.Fatalf("held twice: pace %d, want %d", p, bulkPace)
	}
	inner()
	if p := pace(); p != bulkPace {
		t.Fatalf("one hold left: pace %d, want %d", p, bulkPace)
	}
	outer()
	if p := pace(); p != 400 {
		t.Fatalf("released: pace %d, want 400", p)
	}
	for _, before := range []int{50, -1} {
		debug.SetGCPercent(before)
		release := holdBulkPace()
		if p := pace(); p != before {
			t.Fatalf("pace %d before: held at %d", before, p)
		}
		release()
		if p := pace(); p != before {
			t.Fatalf("pace %d before: %d after", before, p)
		}
	}

	// A restore holds it, and puts it back.
	debug.SetGCPercent(400)
	src := newHarness(t)
	src.apply(command.Command{Type: command.TypeKVSet, Key: []byte("k"), Value: []byte("v")})
	dst := newHarness(t)
	if err := dst.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, src.f)))); err != nil {
		t.Fatal(err)
	}
	if p := pace(); p != 400 {
		t.Fatalf("after a restore: pace %d, want 400", p)
	}
}
