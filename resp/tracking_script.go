package resp

import "slices"

// Client-side caching of scripts, as Redis 7.0 does it: a script that
// calls a read command (GET, HGETALL, ...; not PING, not a write) has
// its declared keys (KEYS, as the client named them) remembered for the
// tracking client that sent it, once, whatever keys the command reads; a
// script that calls none is not tracked. In Redis the script runs in one
// thread and its keys are remembered after the read; here another
// client's write may come between, so the keys are remembered before
// the read command runs. A script a follower's client sends to the
// leader (script_leader.go) may read there: its keys are remembered
// before it is sent, and forgotten for that client when the leader says
// it called no read command (an invalidation pushed meanwhile is one too
// many, never one too few).

// calledRead notes that the run called a read command: its declared keys
// are remembered for the client, once per run (on the leader, for a
// follower's client, the reply says so).
func (sc *scriptCall) calledRead() {
	if sc.readCalled {
		return
	}
	sc.readCalled = true
	c := sc.c
	if f := c.forwarded; f != nil {
		f.readCalled = true
		return
	}
	if c.trackWanted() && len(sc.declared) > 0 {
		c.s.track.remember(c, sc.declared)
	}
}

// forget drops c from the readers of keys: it remembered them for a
// script that read none.
func (t *tracker) forget(c *conn, keys [][]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		rs, ok := t.keys[string(k)]
		if !ok {
			continue
		}
		if i := readerIndex(rs, c.id); i >= 0 {
			rs = slices.Delete(rs, i, i+1)
		}
		if len(rs) == 0 {
			delete(t.keys, string(k))
		} else {
			t.keys[string(k)] = rs
		}
	}
}
