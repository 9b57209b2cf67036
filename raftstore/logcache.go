package raftstore

import (
	"sync"

	"github.com/hashicorp/raft"
)

// logCache keeps the most recent log entries in memory, so replication and
// followers catching up by a batch or two skip bbolt and msgpack. Unlike
// raft.LogCache (a ring of a fixed number of entries, whatever their size)
// it is bounded in bytes too: 4,096 entries of 4 MiB values would be 16 GiB.
// It holds a contiguous range [lo, hi] of indexes; anything that breaks the
// range (a truncated tail, a restore) empties it.
type logCache struct {
	store    raft.LogStore
	maxBytes int

	mu     sync.RWMutex
	ring   []*raft.Log
	lo, hi uint64 // the cached range; empty when hi < lo
	bytes  int
}

var _ raft.LogStore = (*logCache)(nil)

func newLogCache(store raft.LogStore, maxEntries, maxBytes int) *logCache {
	return &logCache{store: store, maxBytes: maxBytes, ring: make([]*raft.Log, maxEntries), lo: 1}
}

// logSize is what an entry costs in memory, roughly.
func logSize(l *raft.Log) int { return len(l.Data) + len(l.Extensions) + 64 }

// IsMonotonic passes the store's answer on (raft.MonotonicLogStore).
func (c *logCache) IsMonotonic() bool {
	m, ok := c.store.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

func (c *logCache) GetLog(idx uint64, log *raft.Log) error {
	c.mu.RLock()
	if idx >= c.lo && idx <= c.hi {
		*log = *c.ring[idx%uint64(len(c.ring))]
		c.mu.RUnlock()
		return nil
	}
	c.mu.RUnlock()
	return c.store.GetLog(idx, log)
}

func (c *logCache) StoreLog(log *raft.Log) error { return c.StoreLogs([]*raft.Log{log}) }

func (c *logCache) StoreLogs(logs []*raft.Log) error {
	if err := c.store.StoreLogs(logs); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range logs {
		size := logSize(l)
		if l.Index != c.hi+1 || size > c.maxBytes {
			c.resetAt(l.Index)
			if size > c.maxBytes {
				c.lo, c.hi = l.Index+1, l.Index // too big to cache: start after it
				continue
			}
		}
		if c.hi-c.lo+1 == uint64(len(c.ring)) {
			c.evictOldest()
		}
		c.hi = l.Index
		c.ring[l.Index%uint64(len(c.ring))] = l
		c.bytes += size
		for c.bytes > c.maxBytes && c.lo < c.hi {
			c.evictOldest()
		}
	}
	return nil
}

func (c *logCache) evictOldest() {
	slot := &c.ring[c.lo%uint64(len(c.ring))]
	c.bytes -= logSize(*slot)
	*slot = nil
	c.lo++
}

// resetAt empties the cache; the next entry it takes is idx.
func (c *logCache) resetAt(idx uint64) {
	for c.lo <= c.hi {
		c.evictOldest()
	}
	c.lo, c.hi = idx, idx-1
}

func (c *logCache) FirstIndex() (uint64, error) { return c.store.FirstIndex() }
func (c *logCache) LastIndex() (uint64, error)  { return c.store.LastIndex() }

// DeleteRange drops the range from the cache first (a reader must never get
// an entry the store no longer has), then from the store. Compaction deletes
// a prefix: the cache keeps the rest.
func (c *logCache) DeleteRange(min, max uint64) error {
	c.mu.Lock()
	switch {
	case c.hi < c.lo || max < c.lo || min > c.hi:
	case min <= c.lo && max < c.hi:
		for c.lo <= max {
			c.evictOldest()
		}
	default:
		c.resetAt(c.hi + 1)
	}
	c.mu.Unlock()
	return c.store.DeleteRange(min, max)
}
