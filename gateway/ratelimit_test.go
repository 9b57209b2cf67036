package gateway

import (
	"testing"
	"time"
)

func TestIPLimiter(t *testing.T) {
	l := newIPLimiter(1, 2, 3) // 1/s, burst 2, 3 addresses remembered
	now := time.Unix(1000, 0)
	for i, want := range []bool{true, true, false} {
		if got := l.allow("a", now); got != want {
			t.Fatalf("a, request %d: allow = %v, want %v", i, got, want)
		}
	}
	if !l.allow("a", now.Add(time.Second)) {
		t.Fatal("a's bucket did not refill after a second")
	}
	l.allow("b", now)
	l.allow("c", now)
	if l.allow("d", now) {
		t.Fatal("a fourth address was remembered beyond the bound while the others were busy")
	}
	if len(l.m) > 3 {
		t.Fatalf("%d addresses remembered, bound 3", len(l.m))
	}
	// Once the others have refilled they are forgotten and d gets in.
	if !l.allow("d", now.Add(5*time.Second)) || len(l.m) > 3 {
		t.Fatalf("d after the others refilled: refused, or %d remembered", len(l.m))
	}
}
