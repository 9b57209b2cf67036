package gateway

import (
	"sync"
	"time"

	"github.com/idemgate/idemgate/command"
)

// replayCache keeps completed records in memory so hot keys replay without
// touching bbolt. A completed record never changes until it is removed
// (expired or released by hand); the state machine tells the cache about
// every removal (fsm.SetRecordObserver), and entries also carry their
// expiry, so the cache never serves what the store no longer holds.
type replayCache struct {
	mu       sync.RWMutex
	m        map[string]*cached
	bytes    int
	maxBytes int
}

// cached is a completed record, ready to write.
type cached struct {
	fingerprint [32]byte
	status      int
	headers     []command.Header
	body        []byte
	bodyDropped bool
	damage      error  // why the stored response failed its checksum (nil: it passed): never replayed
	expiresAt   int64  // unix nanoseconds; 0: never
	expiresHdr  []byte // Idempotency-Expires, formatted once
	size        int
}

func newReplayCache(maxBytes int) *replayCache {
	return &replayCache{m: map[string]*cached{}, maxBytes: maxBytes}
}

// newCached prepares a completed record for replay. Its checksum is
// verified here, once per record as it enters the cache, and not at each
// replay: replays allocate nothing and hash nothing.
func newCached(rec *command.Record) *cached {
	c := &cached{status: rec.Status, headers: rec.Headers, body: rec.Body,
		bodyDropped: rec.BodyDropped, expiresAt: rec.ExpiresAt, expiresHdr: expiresHeader(rec.ExpiresAt)}
	c.damage = rec.Verify()
	copy(c.fingerprint[:], rec.Fingerprint)
	c.size = 128 + len(c.body)
	for _, h := range c.headers {
		c.size += len(h.Name) + len(h.Value) + 16
	}
	return c
}

func expiresHeader(ns int64) []byte {
	if ns == 0 {
		return nil
	}
	return time.Unix(0, ns).UTC().AppendFormat(nil, time.RFC3339)
}

// get returns the live cached record for key, or nil.
func (c *replayCache) get(key []byte, now int64) *cached {
	c.mu.RLock()
	e := c.m[string(key)]
	c.mu.RUnlock()
	if e == nil || (e.expiresAt != 0 && e.expiresAt <= now) {
		return nil
	}
	return e
}

func (c *replayCache) put(key []byte, e *cached) {
	if e.size > c.maxBytes/16 {
		return // one huge body must not flush the cache
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[string(key)]; old != nil {
		c.bytes -= old.size
	}
	for k, v := range c.m { // random eviction: map order is random
		if c.bytes+e.size <= c.maxBytes {
			break
		}
		delete(c.m, k)
		c.bytes -= v.size
	}
	c.m[string(key)] = e
	c.bytes += e.size
}

// remove drops keys the state machine removed; it runs on the apply path.
func (c *replayCache) remove(keys [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		if e := c.m[string(k)]; e != nil {
			c.bytes -= e.size
			delete(c.m, string(k))
		}
	}
}
