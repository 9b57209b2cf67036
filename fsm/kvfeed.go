package fsm

import "github.com/idemgate/idemgate/command"

// The KV feed: a node-local account of the KV keys each applied batch
// changed, for client-side caching (the listener's CLIENT TRACKING). Every
// change of a KV key passes through the apply of this node, whoever made
// it (a command through any node, an expiry, a script's effects, a
// transaction), so the feed misses none. It is not replicated state: a
// node's own listener reads it.

// kvObserverBox holds the observer for an atomic pointer.
type kvObserverBox struct{ o command.KVObserver }

// kvFeed is the apply goroutine's buffer of changed keys, reused from
// batch to batch so that a listened-to apply allocates only as the batch
// outgrows the largest before it.
type kvFeed struct {
	buf  []byte
	ends []int
	by   []command.ReqID // the request id of the command that changed each
	keys [][]byte
}

// SetKVObserver registers o (nil: none) to be told each batch's changed
// KV keys; o.KVChanged(nil, nil, true) is also called when a snapshot replaces
// the state.
func (f *FSM) SetKVObserver(o command.KVObserver) {
	if o == nil {
		f.kvObs.Store(nil)
		return
	}
	f.kvObs.Store(&kvObserverBox{o})
}

// kvObserver is the registered observer, or nil.
func (f *FSM) kvObserver() command.KVObserver {
	if b := f.kvObs.Load(); b != nil {
		return b.o
	}
	return nil
}

// kvTouched notes a KV key the batch wrote or removed, when someone
// listens.
func (a *applier) kvTouched(key []byte) {
	a.kvCount++
	if !a.kvWatch {
		return
	}
	fd := &a.f.feed
	fd.buf = append(fd.buf, key...)
	fd.ends = append(fd.ends, len(fd.buf))
	fd.by = append(fd.by, a.cmd.ReqID)
}

// kvChangedAll makes the batch tell the observer that every key may have
// changed (a flush of the keyspace calls it).
func (a *applier) kvChangedAll() { a.kvAll = true }

// kvStart begins a batch's feed: whether anyone listens.
func (a *applier) kvStart() {
	if o := a.f.kvObserver(); o != nil && o.KVWatching() {
		a.kvWatch = true
		a.f.feed.buf, a.f.feed.ends, a.f.feed.by = a.f.feed.buf[:0], a.f.feed.ends[:0], a.f.feed.by[:0]
	}
}

// kvFinish tells the observer what the committed batch changed. A batch
// that began with no one listening and ends with someone tells "all": a
// key it changed may have been read, and tracked, while it applied.
func (a *applier) kvFinish() {
	o := a.f.kvObserver()
	if o == nil {
		return
	}
	if !a.kvWatch {
		if a.kvAll || (a.kvCount > 0 && o.KVWatching()) {
			o.KVChanged(nil, nil, true)
		}
		return
	}
	fd := &a.f.feed
	if a.kvAll {
		o.KVChanged(nil, nil, true)
	} else if len(fd.ends) > 0 {
		fd.keys = fd.keys[:0]
		start := 0
		for _, end := range fd.ends {
			fd.keys = append(fd.keys, fd.buf[start:end:end])
			start = end
		}
		o.KVChanged(fd.keys, fd.by, false)
	}
	// A batch of a huge value must not pin its memory until the next one.
	if cap(fd.buf) > maxFeedRetained {
		fd.buf, fd.ends, fd.by, fd.keys = nil, nil, nil, nil
	}
}

// maxFeedRetained is the feed buffer kept between batches.
const maxFeedRetained = 1 << 20
