package raftstore

import (
	"testing"

	"github.com/hashicorp/raft"
)

func entry(i uint64, size int) *raft.Log {
	return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: make([]byte, size)}
}

// countingStore is raft's in-memory store, counting reads that reach it.
type countingStore struct {
	*raft.InmemStore
	reads int
}

func (s *countingStore) GetLog(idx uint64, l *raft.Log) error {
	s.reads++
	return s.InmemStore.GetLog(idx, l)
}

func TestLogCacheBoundedInBytes(t *testing.T) {
	store := &countingStore{InmemStore: raft.NewInmemStore()}
	c := newLogCache(store, 100, 10_000)
	for i := uint64(1); i <= 50; i++ {
		if err := c.StoreLogs([]*raft.Log{entry(i, 936)}); err != nil { // 1,000 bytes with the overhead
			t.Fatal(err)
		}
	}
	if c.bytes > 10_000 || c.hi != 50 || c.hi-c.lo+1 != 10 {
		t.Fatalf("cache holds [%d, %d], %d bytes; want the newest 10 entries, at most 10,000 bytes", c.lo, c.hi, c.bytes)
	}
	var l raft.Log
	for i := uint64(1); i <= 50; i++ {
		if err := c.GetLog(i, &l); err != nil || l.Index != i {
			t.Fatalf("GetLog(%d) = %d, %v", i, l.Index, err)
		}
	}
	if store.reads != 40 {
		t.Fatalf("%d reads reached the store, want 40 (the 10 newest are cached)", store.reads)
	}
	// An entry over the byte bound is not cached, and the next ones are.
	c.StoreLogs([]*raft.Log{entry(51, 20_000), entry(52, 10)})
	if c.lo != 52 || c.hi != 52 || c.bytes != logSize(entry(52, 10)) {
		t.Fatalf("after a huge entry: [%d, %d], %d bytes", c.lo, c.hi, c.bytes)
	}
	// Compaction of a prefix keeps the rest; a truncated tail empties it.
	for i := uint64(53); i <= 60; i++ {
		c.StoreLogs([]*raft.Log{entry(i, 10)})
	}
	c.DeleteRange(1, 55)
	if c.lo != 56 || c.hi != 60 {
		t.Fatalf("after compaction: [%d, %d], want [56, 60]", c.lo, c.hi)
	}
	c.DeleteRange(58, 60)
	if c.hi >= c.lo || c.bytes != 0 {
		t.Fatalf("after truncating the tail: [%d, %d], %d bytes; want empty", c.lo, c.hi, c.bytes)
	}
	if err := c.GetLog(59, &l); err == nil {
		t.Fatal("a deleted entry is still readable")
	}
	// A new entry after a gap (a restore) starts a new range.
	c.StoreLogs([]*raft.Log{entry(100, 10)})
	if c.lo != 100 || c.hi != 100 {
		t.Fatalf("after a gap: [%d, %d]", c.lo, c.hi)
	}
	// The entry count bound holds as well.
	for i := uint64(101); i <= 400; i++ {
		c.StoreLogs([]*raft.Log{entry(i, 1)})
	}
	if c.hi-c.lo+1 != 100 {
		t.Fatalf("%d entries cached, want the 100 the ring holds", c.hi-c.lo+1)
	}
}
