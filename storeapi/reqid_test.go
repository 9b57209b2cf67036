package storeapi

import (
	"context"
	"sync"
	"testing"

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
