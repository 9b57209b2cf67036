package storeapi

import (
	"context"
	"sync"
	"testing"

	"github.com/idemgate/idemgate/fsm"
)

// TestRequestIDsOneSource: fresh request ids, drawn at once from many
// goroutines (the stores of one process share the source), are never zero
// and never repeat; RequestID gives a context's own id back, and a fresh
// one when it carries none or a zero one.
func TestRequestIDsOneSource(t *testing.T) {
	const workers, each = 8, 2000
	ids := make([][]fsm.ReqID, workers)
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
	seen := make(map[fsm.ReqID]bool, workers*each)
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
	if got := RequestID(WithRequestID(context.Background(), fsm.ReqID{})); got.IsZero() || seen[got] {
		t.Fatalf("RequestID under a zero id = %x, want a fresh one", got)
	}
}

// TestTimeOrdered: the id of a UUIDv7 key starts with the key's
// millisecond time and keeps the hash's other 10 bytes; ids of later keys
// sort after earlier ones; two requests under one key still differ; every
// other key (v4, wrong variant, cut, braced, bad hex) leaves the id as the
// hash made it.
func TestTimeOrdered(t *testing.T) {
	id := func(key string, parts ...string) fsm.ReqID {
		ps := [][]byte{[]byte("api"), []byte(key)}
		for _, p := range parts {
			ps = append(ps, []byte(p))
		}
		return RequestIDFor(ps...)
	}
	const v7 = "0190f5a2-3c4d-7e8f-9abc-def012345678" // unix_ts_ms 0x0190f5a23c4d
	got := TimeOrdered([]byte(v7), id(v7, "POST"))
	hash := id(v7, "POST")
	if want := [6]byte{0x01, 0x90, 0xf5, 0xa2, 0x3c, 0x4d}; [6]byte(got[:6]) != want || [10]byte(got[6:]) != [10]byte(hash[6:]) {
		t.Fatalf("v7 key: id %x, hash %x", got, hash)
	}
	if upper := TimeOrdered([]byte("0190F5A2-3C4D-7E8F-9ABC-DEF012345678"), hash); [6]byte(upper[:6]) != [6]byte(got[:6]) {
		t.Fatalf("upper-case v7 key: %x", upper)
	}
	if other := TimeOrdered([]byte(v7), id(v7, "PUT")); other == got {
		t.Fatal("two requests under one key: one id")
	}
	later := "0190f5a2-3c4e-7000-8000-000000000000"
	if l := TimeOrdered([]byte(later), id(later, "POST")); string(l[:]) <= string(got[:]) {
		t.Fatalf("a later key's id %x sorts before %x", l, got)
	}
	for _, key := range []string{
		"0190f5a2-3c4d-4e8f-9abc-def012345678",   // v4
		"0190f5a2-3c4d-7e8f-cabc-def012345678",   // variant 110
		"0190f5a2-3c4d-7e8f-7abc-def012345678",   // variant 0
		"0190f5a2-3c4d-7e8f-9abc-def01234567",    // cut
		"{0190f5a2-3c4d-7e8f-9abc-def012345678}", // braced
		"0190f5a2-3c4d-7e8f-9abc-def01234567g",   // bad hex
		"0190f5a2x3c4d-7e8f-9abc-def012345678",   // no hyphen
		"order-1234",
		"",
	} {
		h := id(key, "POST")
		if got := TimeOrdered([]byte(key), h); got != h {
			t.Errorf("%q: id %x, want the hash %x", key, got, h)
		}
	}
}
