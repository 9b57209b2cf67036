package storeapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// TestRequestIDsOneSource: fresh request ids, drawn at once from many
// goroutines (the stores of one process share the source), are never zero
// and never repeat; RequestID gives a context's own id back, and a fresh
// one when it carries none or a zero one.
func TestRequestIDsOneSource(t *testing.T) {
	const workers, each = 8, 2000
	ids := make([][]command.ReqID, workers)
	var wg sync.WaitGroup
	for w := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				ids[w] = append(ids[w], RequestID(context.Background()))
			}
		}()
	}
	wg.Wait()
	seen := make(map[command.ReqID]bool, workers*each)
	for _, batch := range ids {
		for _, id := range batch {
			if id.IsZero() || seen[id] {
				t.Fatalf("fresh id %x: zero or repeated", id)
			}
			seen[id] = true
		}
	}
	own := RequestIDFor([]byte("client"), []byte("retry-1"))
	if got := RequestID(WithRequestID(context.Background(), own)); got != own {
		t.Fatalf("RequestID under WithRequestID = %x, want %x", got, own)
	}
	if got := RequestID(WithRequestID(context.Background(), command.ReqID{})); got.IsZero() || seen[got] {
		t.Fatalf("RequestID under a zero id = %x, want a fresh one", got)
	}
}

// TestFreshRequestIDsInTimeOrder: a fresh id starts with the time it was
// made (the state machine's memory of ids then appends them, whichever
// node made them), and ids made one after another sort in that order.
func TestFreshRequestIDsInTimeOrder(t *testing.T) {
	before := time.Now().UnixNano()
	prev := NewRequestID()
	for range 1000 {
		id := NewRequestID()
		if bytes.Compare(id[:], prev[:]) <= 0 {
			t.Fatalf("fresh id %x after %x: not in the order made", id, prev)
		}
		prev = id
	}
	after := time.Now().UnixNano()
	if made := int64(binary.BigEndian.Uint64(prev[:8])); made < before || made > after {
		t.Fatalf("fresh id %x made at %d, want between %d and %d", prev, made, before, after)
	}
}
