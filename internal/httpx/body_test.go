package httpx

import (
	"testing"
)

func TestBodyBudgetAccounting(t *testing.T) {
	b := NewBodyBudget(100, 0)
	if !b.take(60) || b.take(50) || !b.take(40) || b.take(1) {
		t.Fatal("take does not respect the bound")
	}
	b.give(60)
	if !b.take(60) {
		t.Fatal("give did not return the bytes")
	}
	if d := NewBodyBudget(0, 1<<20); d.max != 64<<20 {
		t.Fatalf("default budget %d, want 64 bodies", d.max)
	}
}
