package resp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// A follower's writing scripts run on the leader. A node's writing scripts
// on the same keys take turns (script_turns.go), so the leader's never
// race each other; a follower's would race them, and lose: its run reads
// a round trip away from the log, and its effects reach the log a round
// trip later, so a key the leader's scripts write often has changed by
// then, and after maxScriptRuns lost runs the client is told its script
// failed (BullMQ's producers and workers on several nodes saw failed
// jobs). So a follower hands a writing script to the leader's listener,
// which runs it as its own client's script would run (in turn with the
// leader's, from the leader's state, its effects checked in the log as
// any script's are), and answers the reply it wrote; the follower writes
// those bytes to its client.
//
// Always, not only after a lost race: a first run on the follower reads
// each key from the leader (a round trip each) and then sends its effects
// (one more), where the forwarded script costs one round trip and the
// leader's own run. BenchmarkFollowerScript, one client, a script of 3
// keys on a loaded 2-core machine: 11.4 ms a call run on the follower,
// 2.5 ms handed to the leader (3.2 ms from the leader's own client); 8
// clients on each node on the same keys: 4.5 ms a call and one in ten
// failed, against 3.6 ms and none. A connection that sent READONLY reads
// this node's state: its scripts still run here.
//
// What travels (LeaderScripts carries it, and never reads it) is what the
// follower checked and the leader needs to run the script as it would
// have run here:
//
//	version (1) = 1 | flags (1) | id (16) | keyspace (uvarint) | budget ms (uvarint)
//	| grant name (uvarint length, bytes) | body (uvarint length, bytes)
//	| keys (uvarint count, each uvarint length, bytes) | arguments (same)
//
// flags: bit 0 RESP3, bit 1 the client authenticated (the grant that
// follows is its; else no tokens are configured), bit 2 its grant writes,
// bit 3 its grant is the admin role's, bit 4 the client tracks keys: the
// reply is then preceded by one byte, 1 if the script called a read
// command, else 0 (client-side caching remembers a script's keys only
// then, tracking_script.go); a leader that does not know the bit refuses
// the request as malformed, nothing run, and the follower sends it again
// without. id names the script's effects: a run's entry carries an id
// made of it, the attempt and the run
// (runID), so that a follower that lost the leader with its script's
// answer sends it again to the next, which first looks whether an
// earlier attempt's entry was applied (then it answers the unknown
// outcome, the reply being lost) and else runs it: applied once, never
// twice. The body, not the SHA-1: the leader need not have the script
// cached (it keeps it compiled, but its own clients' EVALSHA does not
// find it: each node answers EVALSHA for what its clients gave it, as a
// Redis Cluster node does). The leader's listener checks the body
// against its own scripts.max_size, and the script's writes against the
// grant as the follower would have (a read-only token's writes are
// refused there too): nothing the follower did not grant is granted.

// LeaderScripts carries a script a follower's client sent to the leader's
// listener, which runs it (*raftstore.Store implements it; a store
// without it, one node, runs every script where it is sent).
type LeaderScripts interface {
	// LeaderScript sends req to the leader's listener (the function
	// OnLeaderScript registered there) and returns the reply it wrote.
	// An error is an outcome of the store's (storeapi's), answered as
	// such: storeapi.ErrTimeout when the script may or may not have been
	// applied. Nil and no error: nothing was sent (the leader runs no
	// forwarded scripts, or req is too large to forward); the caller runs
	// the script itself.
	LeaderScript(ctx context.Context, req []byte) ([]byte, error)
	// OnLeaderScript registers what runs a forwarded script on this node
	// while it leads: the reply, at most maxReply bytes. attempt counts
	// the follower's sends of req (1 the first); a later one may follow
	// one whose fate the follower never learnt.
	OnLeaderScript(fn func(req []byte, attempt, maxReply int) ([]byte, error))
	// RequestApplied reports whether a command of one of ids was
	// applied (with an OK result), after a barrier: what an earlier
	// leader did not commit by then never will be.
	RequestApplied(ctx context.Context, ids []command.ReqID) (bool, error)
}

const scriptRequestVersion = 1

const (
	scriptFlagRESP3 = 1 << iota
	scriptFlagSession
	scriptFlagWrite
	scriptFlagAdmin
	scriptFlagReads
)

// errScriptRequest: a forwarded script's request that is not of the
// layout above; nothing ran.
var errScriptRequest = fmt.Errorf("%w: a forwarded script's request is malformed", command.ErrBadCommand)

// msgLeaderReplyTooLarge: a forwarded script's reply that a forwarding
// frame cannot carry back; what it wrote was applied.
const msgLeaderReplyTooLarge = "ERR this script ran on the leader, and its reply of %d bytes is over what a node forwards back (%d bytes); what it wrote was applied"

// scriptRequest is a forwarded script, as the follower sends it.
type scriptRequest struct {
	id         command.ReqID
	proto      int
	db         int
	budget     time.Duration
	session    bool
	reads      bool // the reply says whether the script called a read command
	grant      Grant
	body       []byte
	keys, argv [][]byte
}

func (r *scriptRequest) encode() []byte {
	n := 32 + len(r.grant.Name) + len(r.body)
	for _, list := range [][][]byte{r.keys, r.argv} {
		for _, x := range list {
			n += binary.MaxVarintLen32 + len(x)
		}
	}
	flags := byte(0)
	if r.proto >= 3 {
		flags |= scriptFlagRESP3
	}
	if r.reads {
		flags |= scriptFlagReads
	}
	if r.session {
		flags |= scriptFlagSession
		if r.grant.Write {
			flags |= scriptFlagWrite
		}
		if r.grant.Admin {
			flags |= scriptFlagAdmin
		}
	}
	b := append(make([]byte, 0, n), scriptRequestVersion, flags)
	b = append(b, r.id[:]...)
	b = binary.AppendUvarint(b, uint64(r.db))
	b = binary.AppendUvarint(b, uint64(r.budget/time.Millisecond))
	b = appendBytes(b, []byte(r.grant.Name))
	b = appendBytes(b, r.body)
	for _, list := range [][][]byte{r.keys, r.argv} {
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, x := range list {
			b = appendBytes(b, x)
		}
	}
	return b
}

func appendBytes(b, x []byte) []byte { return append(binary.AppendUvarint(b, uint64(len(x))), x...) }

// decodeScriptRequest reads a forwarded script's request (its slices are
// p's); maxArgs bounds the keys and arguments together.
func decodeScriptRequest(p []byte, maxArgs int) (*scriptRequest, error) {
	if len(p) < 2 || p[0] != scriptRequestVersion || p[1]&^(scriptFlagRESP3|scriptFlagSession|scriptFlagWrite|scriptFlagAdmin|scriptFlagReads) != 0 {
		return nil, errScriptRequest
	}
	flags := p[1]
	if len(p) < 2+len(command.ReqID{}) {
		return nil, errScriptRequest
	}
	var id command.ReqID
	copy(id[:], p[2:])
	p = p[2+len(id):]
	uv := func() (uint64, bool) {
		v, k := binary.Uvarint(p)
		if k <= 0 {
			return 0, false
		}
		p = p[k:]
		return v, true
	}
	bytesOf := func() ([]byte, bool) {
		l, ok := uv()
		if !ok || l > uint64(len(p)) {
			return nil, false
		}
		x := p[:l:l]
		p = p[l:]
		return x, true
	}
	r := &scriptRequest{id: id, proto: 2, session: flags&scriptFlagSession != 0, reads: flags&scriptFlagReads != 0}
	if flags&scriptFlagRESP3 != 0 {
		r.proto = 3
	}
	db, ok1 := uv()
	ms, ok2 := uv()
	name, ok3 := bytesOf()
	body, ok4 := bytesOf()
	if !ok1 || !ok2 || !ok3 || !ok4 || db >= command.Keyspaces || ms > uint64(time.Hour/time.Millisecond) {
		return nil, errScriptRequest
	}
	r.db, r.budget, r.body = int(db), time.Duration(ms)*time.Millisecond, body
	r.grant = Grant{Name: string(name), Write: flags&scriptFlagWrite != 0, Admin: flags&scriptFlagAdmin != 0}
	for _, list := range []*[][]byte{&r.keys, &r.argv} {
		n, ok := uv()
		if !ok || n > uint64(len(p)) || int(n)+len(r.keys) > maxArgs {
			return nil, errScriptRequest
		}
		*list = make([][]byte, n)
		for i := range *list {
			if (*list)[i], ok = bytesOf(); !ok {
				return nil, errScriptRequest
			}
		}
	}
	if len(p) != 0 {
		return nil, errScriptRequest
	}
	return r, nil
}

// runOnLeader hands a writing script to the leader (c's node follows) and
// writes the reply the leader's listener wrote; false when nothing was sent
// (LeaderScripts's nil answer): the caller runs it here. Client-side
// caching remembers the script's keys for c before it is sent (after a
// barrier), and forgets them if the leader says it called no read command
// (tracking_script.go).
func (c *conn) runOnLeader(ctx context.Context, w *writer, ls LeaderScripts, body []byte, keys, argv [][]byte) bool {
	r := scriptRequest{id: storeapi.NewRequestID(), proto: c.proto, db: c.db, body: body, keys: keys, argv: argv}
	c.ownLeaderScript(r.id) // before its keys are remembered
	if c.trackWanted() {
		// Remembered before the script may read them, once this node has
		// applied every write acknowledged before the call (another
		// client's, applied here after the keys were remembered, would be
		// pushed as if it came after the script); forgotten after, if it
		// called no read command.
		if err := c.trackBarrier(); err != nil {
			w.errorLine(errorReply(err))
			return true
		}
		c.s.track.remember(c, keys)
		r.reads = true
	}
	if dl, ok := ctx.Deadline(); ok {
		r.budget = max(time.Until(dl), time.Millisecond)
	}
	if sess := c.sess.Load(); sess != nil {
		r.session, r.grant = true, sess.grant
	}
	reply, err := ls.LeaderScript(ctx, r.encode())
	if r.reads && errors.Is(err, command.ErrBadCommand) {
		// A leader that knows no flags bit 4: nothing ran. Its keys stay
		// remembered, read or not (an invalidation too many at most).
		r.reads = false
		reply, err = ls.LeaderScript(ctx, r.encode())
	}
	if r.reads && err == nil && len(reply) > 0 {
		if reply[0] == 0 {
			c.s.track.forget(c, keys)
		}
		reply = reply[1:]
	}
	switch {
	case err != nil:
		w.errorLine(errorReply(err))
	case reply == nil:
		return false
	case len(reply) == 0:
		w.errorLine("ERR the leader answered nothing to this script; it may or may not have been applied")
	default:
		w.rawReply(reply)
	}
	return true
}

// forwardedRun is a follower's script run here, the leader: its id and
// the follower's attempt.
type forwardedRun struct {
	id      command.ReqID
	attempt int
	// readCalled: a run called a read command (tracking_script.go).
	readCalled bool
}

// runID is the id of the entry of the script's run (1 the first) in
// attempt.
func (f *forwardedRun) runID(attempt, run int) command.ReqID {
	return storeapi.RequestIDFor(f.id[:], []byte{byte(attempt), byte(run)})
}

// settled answers a later attempt whose earlier ones' fate is unknown,
// once its turns are held: true when one of theirs was applied (the
// reply is then the unknown outcome's: the script ran, its reply was
// lost with the leader), or when the look failed (its error); false: none
// was, nor will be, and this attempt runs.
func (f *forwardedRun) settled(ctx context.Context, c *conn, w *writer) bool {
	if f.attempt <= 1 {
		return false
	}
	ids := make([]command.ReqID, 0, (f.attempt-1)*maxScriptRuns)
	for a := 1; a < f.attempt; a++ {
		for run := 1; run <= maxScriptRuns; run++ {
			ids = append(ids, f.runID(a, run))
		}
	}
	applied, err := c.s.leaders.RequestApplied(ctx, ids)
	switch {
	case err != nil:
		w.errorLine(errorReply(err))
	case applied:
		w.errorLine(errorReply(storeapi.ErrTimeout))
	}
	return err != nil || applied
}

// runLeaderScript runs a script a follower forwarded (LeaderScripts), on
// this node, the leader, as its own client's script would run: on a
// connection of the request's keyspace, protocol and grant, holding the
// turns of its keys, its reads against the listener's budget; the reply
// it wrote, at most maxReply bytes. An error: the request could not be
// read, and nothing ran.
func (s *Server) runLeaderScript(req []byte, attempt, maxReply int) ([]byte, error) {
	r, err := decodeScriptRequest(req, s.cfg.MaxArgs)
	if err != nil {
		return nil, err
	}
	f := &forwardedRun{id: r.id, attempt: attempt}
	c := &conn{s: s, proto: r.proto, db: r.db, created: time.Now(), forwarded: f}
	c.acct = account{b: &s.budget, allow: connAllowance}
	defer c.acct.keep(0)
	if r.session {
		c.sess.Store(&session{grant: r.grant})
	}
	var buf bytes.Buffer
	w := writer{bw: bufio.NewWriterSize(&buf, 512), proto: r.proto}
	// The follower's own wait, less the way here: a run that could not
	// begin within it (its turns, a slot) answers its refusal, not an
	// unknown outcome.
	budget := s.cfg.OpTimeout + s.cfg.Script.Timeout
	if r.budget > 0 {
		budget = min(budget, r.budget)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	sc, err := s.scripts.loadForwarded(ctx, r.body)
	if err != nil {
		w.errorLine(slotRefusal(err))
	} else if readOnly, refusal := scriptReadOnly(sc, false); refusal != "" {
		w.errorLine(refusal)
	} else {
		c.runScriptWithin(ctx, budget, &w, sc, r.keys, r.argv, readOnly)
	}
	if err := w.bw.Flush(); err != nil {
		return nil, err
	}
	var out []byte // the reply, after the byte that says whether it read
	if r.reads {
		maxReply--
		out = []byte{byte(boolInt(f.readCalled))}
	}
	if buf.Len() > maxReply {
		return fmt.Appendf(out, "-"+msgLeaderReplyTooLarge+"\r\n", buf.Len(), maxReply), nil
	}
	if buf.Len() == 0 {
		return nil, errors.New("a forwarded script answered nothing")
	}
	if out == nil {
		return buf.Bytes(), nil
	}
	return append(out, buf.Bytes()...), nil
}
