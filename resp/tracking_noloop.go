package resp

import (
	"context"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// NOLOOP (CLIENT TRACKING ON … NOLOOP): a connection is not told of the
// changes its own writes make, as Redis skips the client whose command
// made the change. The state machine's feed names, with each changed
// key, the request id of the command that changed it
// (command.KVObserver); a NOLOOP connection gives each write it sends a
// request id of its own and the tracker notes it (loops), so a change
// made under one is skipped for that connection, and for it alone:
// other readers of the key are told, and the key is forgotten for all,
// as in Redis. A write may apply on this node after its reply (a
// follower applies what the leader committed a moment later), so an id
// is held until a change made under it is seen, or until the connection
// has sent maxLoopIDs writes since (a write that changed nothing is never
// seen), or tracking is turned off or changed. An id let go too early
// costs the connection an invalidation of its own write: one too many,
// never one too few. For the same reason the connection's own read of
// the key is forgotten only if it was remembered before the write was
// noted (tracker.tick): a read sent after the write, of a later command,
// may be remembered before this node applies the write, and must outlive
// it, as in Redis, where the write came first. A transaction's and a
// script's writes are noted before their reads are remembered, so those
// reads outlive them: one that writes a key and then reads it is told of
// the next change, as in Redis; one that reads it and then writes it is
// too (Redis is not): an invalidation too many.
//
// A script run on the leader for a follower's connection applies its
// effects under ids made of its request's (forwardedRun.runID): those of
// its first attempt are noted; a later attempt's (after the leader was
// lost mid-script) are not.
//
// As in Redis, a BCAST connection is told of what its scripts change
// (Redis counts a script's writes as its Lua client's there, not the
// caller's); a connection in the default mode is not.

// maxLoopIDs bounds the ids held for one NOLOOP connection.
const maxLoopIDs = 4096

// loopWrite is the sender of a NOLOOP connection's write, whether the
// write is a script's effects, and when it was noted (tracker.tick): a
// read of the same connection remembered after it is a later command's,
// and outlives the write's change however late this node applies it.
type loopWrite struct {
	conn   int64
	script bool
	tick   uint64
}

// excludes reports whether a BCAST connection tc is not told of the
// change.
func (w loopWrite) excludes(tc *trackClient) bool { return w.conn == tc.c.id && !w.script }

// looped is the NOLOOP write that made the i-th change: a zero
// loopWrite when none did. Under t.mu.
func (t *tracker) looped(by []command.ReqID, i int) loopWrite {
	if len(t.loops) == 0 || i >= len(by) {
		return loopWrite{}
	}
	return t.loops[by[i]]
}

// seen lets go of the ids of a batch's changes: each was applied here.
// Under t.mu.
func (t *tracker) seen(by []command.ReqID) {
	if len(t.loops) == 0 {
		return
	}
	for _, id := range by {
		delete(t.loops, id)
	}
}

// own notes ids as writes of c, a script's effects if script, when c
// tracks with NOLOOP.
func (t *tracker) own(c *conn, ids []command.ReqID, script bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tc := t.clients[c.id]
	if tc == nil || !tc.noloop {
		return
	}
	t.tick++
	for _, id := range ids {
		if len(tc.sent) < maxLoopIDs {
			tc.sent = append(tc.sent, id)
		} else {
			delete(t.loops, tc.sent[tc.next]) // the oldest: let go
			tc.sent[tc.next] = id
			tc.next = (tc.next + 1) % maxLoopIDs
		}
		t.loops[id] = loopWrite{conn: c.id, script: script, tick: t.tick}
	}
}

// dropLoops lets go of tc's ids: its tracking is off or changed. Under
// t.mu.
func (t *tracker) dropLoops(tc *trackClient) {
	for _, id := range tc.sent {
		if t.loops[id].conn == tc.c.id {
			delete(t.loops, id)
		}
	}
	tc.sent, tc.next = nil, 0
}

// noloop reports whether c tracks with NOLOOP: its writes are to be
// noted before they are sent.
func (c *conn) noloop() bool { return c.track.on && c.track.noloop }

// ownWrites gives each of cmds without a request id a fresh one, and
// notes them all as c's writes when c tracks with NOLOOP: call it before
// cmds are sent to the store.
func (c *conn) ownWrites(cmds []*command.Command) {
	if !c.noloop() {
		return
	}
	ids := make([]command.ReqID, 0, len(cmds))
	for _, cmd := range cmds {
		if cmd.ReqID.IsZero() {
			cmd.ReqID = storeapi.NewRequestID()
		}
		ids = append(ids, cmd.ReqID)
	}
	c.s.track.own(c, ids, false)
}

// ownScriptRun is the request id a run of a script (or of a transaction
// holding one) of c applies its effects under, noted as c's write when c
// tracks with NOLOOP, before the run remembers what it reads: zero when
// there is nothing to note (the store then gives one). A run that writes
// nothing leaves its id held until the bound lets it go.
func (c *conn) ownScriptRun(readOnly bool) command.ReqID {
	if readOnly || !c.noloop() || c.forwarded != nil {
		return command.ReqID{}
	}
	id := storeapi.NewRequestID()
	c.s.track.own(c, []command.ReqID{id}, true)
	return id
}

// ownTx is ctx naming the request id a transaction of c is proposed
// under, noted as c's write (when c tracks with NOLOOP).
func (c *conn) ownTx(ctx context.Context) context.Context {
	if !c.noloop() {
		return ctx
	}
	id, ok := storeapi.RequestIDFrom(ctx)
	if !ok {
		id = storeapi.NewRequestID()
		ctx = storeapi.WithRequestID(ctx, id)
	}
	c.s.track.own(c, []command.ReqID{id}, false)
	return ctx
}

// ownLeaderScript notes the ids of the entries a script c sends to the
// leader applies in its first attempt (forwardedRun.runID).
func (c *conn) ownLeaderScript(id command.ReqID) {
	if !c.noloop() {
		return
	}
	f := forwardedRun{id: id}
	ids := make([]command.ReqID, 0, maxScriptRuns)
	for run := 1; run <= maxScriptRuns; run++ {
		ids = append(ids, f.runID(1, run))
	}
	c.s.track.own(c, ids, true)
}
