package resp

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/storeapi"
)

// Blocking pops (BLPOP, BRPOP, BLMPOP; of sorted sets BZPOPMIN,
// BZPOPMAX, BZMPOP) and moves (BLMOVE, BRPOPLPUSH), each waiting on its
// source keys for the kind it pops. A client blocks on the node it is
// connected to. Its pop is always a write through the log (never a pop on
// one node only): first at once, unless none of its keys exists here
// after the read barrier; when every key was empty, it waits in
// each key's queue of this node, in arrival order, as Redis serves its
// blocked clients. One goroutine per node (the blocker) wakes at each
// apply of this node's state machine (Store.Changed, no timer) and, for
// each waited key that now holds a list or a sorted set, signals the
// first waiter of its queue that waits for that kind (as Redis serves a
// key's clients of its type) unless one before it is already popping; that waiter proposes its pop and
// either answers (and leaves every queue) or, when another client or node
// took the elements first, stays first and waits again. A waiter that
// times out answers a null array; one whose client disconnects leaves
// without popping.

// blockSpec is what a blocking pop waits on.
type blockSpec struct {
	keys    [][]byte
	wait    int64 // milliseconds; 0 with forever
	forever bool
	// kind is what the pop takes: a push of it wakes the waiter
	// (KindList when zero, as every list command's spec leaves it).
	kind command.Kind
	// group is an XREADGROUP's wait (commands_stream_group.go): it tries
	// at once always, wakes when a stream's version changed since its
	// last try, and answers a stream or group gone as Redis does; nil: a
	// pop's.
	group *groupWait
}

// wants is the kind the spec waits for.
func (s *blockSpec) wants() command.Kind {
	if s.kind == 0 {
		return command.KindList
	}
	return s.kind
}

// waiter is one blocked client.
type waiter struct {
	keys [][]byte
	// kind is what a pop takes (blockSpec.wants); ready, when set, says
	// instead whether the key's entry e is what the waiter waits for (an
	// XREAD's: a stream past its id).
	kind  command.Kind
	ready func(key string, e command.KVEntry) bool
	wake  chan struct{} // one signal: "pop now"
	// popping: signalled and not yet back (under blocker.mu): the blocker
	// does not signal the next in its queues meanwhile, so they are
	// served in order.
	popping bool
}

// blocker is a node's blocked clients, by key.
type blocker struct {
	s       *Server
	mu      sync.Mutex
	queues  map[string][]*waiter
	waiters int
	running bool
	poke    chan struct{} // a waiter left or is back: look again
}

func newBlocker(s *Server) *blocker {
	return &blocker{s: s, queues: map[string][]*waiter{}, poke: make(chan struct{}, 1)}
}

// add adds a waiter on keys for a pop of kind.
func (b *blocker) add(keys [][]byte, kind command.Kind) *waiter {
	return b.addWaiter(&waiter{keys: keys, kind: kind, wake: make(chan struct{}, 1)})
}

// addReady adds a waiter on keys that ready says when to wake.
func (b *blocker) addReady(keys [][]byte, ready func(key string, e command.KVEntry) bool) *waiter {
	return b.addWaiter(&waiter{keys: keys, ready: ready, wake: make(chan struct{}, 1)})
}

// wants is whether the key's entry e is what w waits for.
func (w *waiter) wants(key string, e command.KVEntry) bool {
	if w.ready != nil {
		return w.ready(key, e)
	}
	return e.Kind == w.kind
}

func (b *blocker) addWaiter(w *waiter) *waiter {
	keys := w.keys
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := map[string]bool{}
	for _, k := range keys {
		if !seen[string(k)] { // BLPOP k k waits once on k
			seen[string(k)] = true
			b.queues[string(k)] = append(b.queues[string(k)], w)
		}
	}
	b.waiters++
	if !b.running {
		b.running = true
		go b.run()
	}
	b.pokeLocked()
	return w
}

// blocked is how many clients wait on this node (INFO's blocked_clients,
// which Redis's own tests wait on).
func (b *blocker) blocked() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters
}

// remove takes w out of every queue.
func (b *blocker) remove(w *waiter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range w.keys {
		q := b.queues[string(k)]
		for i, x := range q {
			if x == w {
				q = append(q[:i:i], q[i+1:]...)
				break
			}
		}
		if len(q) == 0 {
			delete(b.queues, string(k))
		} else {
			b.queues[string(k)] = q
		}
	}
	b.waiters--
	b.pokeLocked()
}

// back: w popped nothing and waits again, first where it was.
func (b *blocker) back(w *waiter) {
	b.mu.Lock()
	w.popping = false
	b.pokeLocked()
	b.mu.Unlock()
}

func (b *blocker) pokeLocked() {
	select {
	case b.poke <- struct{}{}:
	default:
	}
}

// run is the blocker's loop; it ends when no client waits.
func (b *blocker) run() {
	for {
		changed := b.s.store.Changed() // before the reads: an apply after them fires it
		b.mu.Lock()
		if b.waiters == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		var keys []string
		for k, q := range b.queues {
			if !q[0].popping {
				keys = append(keys, k)
			}
		}
		b.mu.Unlock()
		for _, k := range keys {
			e, err := b.s.store.KV(context.Background(), []byte(k), true)
			if errors.Is(err, command.ErrNotFound) {
				// Absent: no pop's kind is the zero entry's, but a
				// group's waiter may wait for a key to go.
				e, err = command.KVEntry{}, nil
			}
			if err != nil {
				continue
			}
			b.mu.Lock()
			for _, w := range b.queues[k] {
				if w.popping {
					break // served in order: the next once it is back
				}
				// A waiter for another kind is passed over: its pop would
				// answer the key, but only a push of its kind is waited for.
				if w.wants(k, e) {
					w.popping = true
					w.wake <- struct{}{}
					break
				}
			}
			b.mu.Unlock()
		}
		select {
		case <-changed:
		case <-b.poke:
		}
	}
}

// blockingPop runs a blocking pop's plan outside MULTI and scripts.
func (c *conn) blockingPop(p plan) {
	pop := func(ops []*command.Command) []storeapi.OpResult {
		ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.OpTimeout)
		defer cancel()
		c.ownWrites(ops)
		return c.s.store.ApplyInOrder(ctx, ops)
	}
	g := p.block.group
	if g != nil || !c.allAbsent(p.block.keys) {
		res := pop(p.ops)
		if res[0].Err != nil || res[0].Res.Code != command.CodeNotFound {
			p.answer(&c.w, res)
			return
		}
		if g != nil {
			g.saw(p.block.keys, res[0].Res)
		}
	}
	if c.flush() != nil { // the replies before it are not held back while it waits
		c.quit = true
		return
	}
	b := c.s.blocks
	ops, answer, w := p.ops, p.answer, (*waiter)(nil)
	if g != nil {
		ops, answer, w = g.retry(p.ops), g.woken, b.addReady(p.block.keys, g.ready)
	} else {
		w = b.add(p.block.keys, p.block.wants())
	}
	gone := make(chan struct{})
	stop := httpx.WatchClose(c.nc, func() { close(gone) }) // a blocked client is never idle (Redis's timeout spares it too)
	defer stop()
	var timeout <-chan time.Time
	if !p.block.forever {
		t := time.NewTimer(time.Duration(p.block.wait) * time.Millisecond)
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case <-w.wake:
			res := pop(ops)
			if res[0].Err == nil && res[0].Res.Code == command.CodeNotFound {
				if g != nil {
					g.saw(p.block.keys, res[0].Res)
				}
				b.back(w)
				continue
			}
			b.remove(w)
			answer(&c.w, res)
			return
		case <-timeout:
			b.remove(w)
			c.w.nullArray()
			return
		case <-gone:
			b.remove(w) // disconnected: nothing popped, nothing answered
			c.quit = true
			return
		case <-c.s.stopping:
			b.remove(w) // the listener is closing: nothing popped
			c.quit = true
			return
		}
	}
}

// allAbsent: after the read barrier, this node holds none of keys, so the
// pop would find nothing: the client waits without a log entry (a lock's
// waiters BLPOP a signal list that is usually absent). A push acknowledged
// before the call is applied here by then; one after wakes the waiter.
func (c *conn) allAbsent(keys [][]byte) bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.OpTimeout)
	defer cancel()
	if !c.readonly && c.s.store.Barrier(ctx) != nil {
		return false // the pop answers the store's error
	}
	for _, k := range keys {
		if _, err := c.s.store.KV(ctx, k, true); !errors.Is(err, command.ErrNotFound) {
			return false
		}
	}
	return true
}
