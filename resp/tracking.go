package resp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemgate/idemgate/command"
)

// Client-side caching: CLIENT TRACKING, CLIENT CACHING, CLIENT GETREDIR,
// CLIENT TRACKINGINFO, and the invalidation pushes, as Redis 6+ sends them
// (RESP3 ">2 invalidate [keys]", a null key list for "everything").
//
// The keys a tracking connection reads (the keys of its read commands, of
// its transactions' reads, and a script's declared keys once it calls a
// read command (tracking_script.go), in default, OPTIN and OPTOUT mode)
// are remembered in one table of the node (tracker), before the read
// runs. Every change of a KV key this node applies, whoever made
// it, comes up from the state machine's apply (command.KVObserver: the
// Server's KVWatching and KVChanged); a remembered key is then forgotten
// and its readers told, and a BCAST connection is told of every key under
// its prefixes. Where the feed cannot say which keys changed (a snapshot
// restore, a batch that began before anyone tracked), every tracking
// connection is told to drop everything: an invalidation too many costs a
// read; one too few serves a stale value.
//
// Order: a connection's goroutine holds its write lock (conn.wmu) from
// reading a batch's first command until its replies are flushed, and a
// push is written only under that lock, so the invalidation of a key
// changed after a read reaches the client after that read's reply, never
// before it (which would leave the client caching what it was just told
// to drop). The apply never waits for a client: it adds to the
// connection's pending invalidations (bounded; past the bound they become
// one "everything"), and the connection's pusher goroutine writes them.
// A client that does not read its socket is closed when a push's write
// times out (WriteTimeout), as any slow reader is.

const (
	msgTrackPrefixNoBcast = "ERR PREFIX option requires BCAST mode to be enabled"
	msgTrackBcastSwitch   = "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
	msgTrackBcastOpt      = "ERR OPTIN and OPTOUT are not compatible with BCAST"
	msgTrackBothOpt       = "ERR You can't specify both OPTIN mode and OPTOUT mode"
	msgTrackOptSwitch     = "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."
	msgTrackRedirTwice    = "ERR A client can only redirect to a single other client"
	msgTrackRedirGone     = "ERR The client ID you want redirect to does not exist"
	msgCachingNotTracking = "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
	msgCachingYes         = "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
	msgCachingNo          = "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
)

// tracking is a connection's CLIENT TRACKING state; its goroutine's own.
// The tracker keeps a copy of what the apply path needs (trackClient).
type tracking struct {
	on, bcast, optin, optout, noloop bool
	redirect                         int64
	prefixes                         []string // BCAST's, sorted
	// caching: CLIENT CACHING YES (OPTIN) or NO (OPTOUT) was given for
	// the next command (or the next transaction).
	caching bool
}

// trackClient is what the tracker knows of a tracking connection.
type trackClient struct {
	c        *conn
	redirect int64
	bcast    bool
	prefixes [][]byte
	// noloop: the changes of the connection's own writes are not pushed
	// to it; sent are their request ids the tracker holds (in loops), a
	// ring from next (tracking_noloop.go).
	noloop bool
	sent   []command.ReqID
	next   int
}

// tracker is the node's table of remembered keys and tracking
// connections.
type tracker struct {
	s      *Server
	active atomic.Int64 // connections with tracking on: the feed runs while > 0

	mu      sync.Mutex
	keys    map[string][]keyReader // key -> the connections that read it
	clients map[int64]*trackClient
	bcast   map[int64]*trackClient
	// loops: the request ids of writes NOLOOP connections sent, each
	// with its sender (tracking_noloop.go).
	loops map[command.ReqID]loopWrite
	// tick orders what the connections' goroutines note: a read
	// remembered, a NOLOOP write about to be sent.
	tick uint64
}

// keyReader is a connection that read a key, and when it was remembered
// (tracker.tick).
type keyReader struct {
	id   int64
	tick uint64
}

func newTracker(s *Server) *tracker {
	return &tracker{s: s, keys: map[string][]keyReader{}, clients: map[int64]*trackClient{}, bcast: map[int64]*trackClient{},
		loops: map[command.ReqID]loopWrite{}}
}

// KVWatching reports whether a connection tracks keys (command.KVObserver):
// while none does, the state machine collects no changed keys.
func (s *Server) KVWatching() bool { return s.track.active.Load() > 0 }

// KVChanged is told the KV keys an applied batch changed and the request
// ids of the commands that changed them, or all (command.KVObserver); it
// runs on the apply path and only queues pushes.
func (s *Server) KVChanged(keys [][]byte, by []command.ReqID, all bool) {
	s.track.changed(keys, by, all)
}

func (t *tracker) changed(keys [][]byte, by []command.ReqID, all bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if all {
		clear(t.keys)
		for _, tc := range t.clients {
			t.deliver(tc, nil)
		}
		return
	}
	for i, stored := range keys {
		// Keys are tracked by the client's name, whatever its keyspace,
		// as Redis tracks them: a write in one keyspace invalidates a
		// reader of the same name in another (more than needed, never
		// less). Reserved keys are no client's.
		_, k, ok := command.KeyspaceOf(stored)
		if !ok {
			continue
		}
		if rs, ok := t.keys[string(k)]; ok {
			delete(t.keys, string(k))
			w := t.looped(by, i)
			for _, r := range rs {
				switch tc := t.clients[r.id]; {
				case tc == nil || tc.bcast:
				case r.id != w.conn:
					t.deliver(tc, k)
				case r.tick > w.tick:
					// Its own write, applied here after a read it sent
					// later (a follower applies what the leader committed
					// a moment after): the read is still to be told of.
					t.keys[string(k)] = []keyReader{r}
				}
			}
		}
	}
	// A BCAST connection is told of the batch's keys under each of its
	// prefixes in one push, as Redis gathers them per prefix (its
	// prefixes never overlap: a key is under one at most). Redis gathers
	// what changed between two turns of its event loop; a node, what one
	// applied batch changed (a command, a transaction, a script, or the
	// commands the leader put in one log entry).
	for _, tc := range t.bcast {
		for _, p := range tc.prefixes {
			var under [][]byte
			for i, stored := range keys {
				if _, k, ok := command.KeyspaceOf(stored); ok && bytes.HasPrefix(k, p) && !t.looped(by, i).excludes(tc) {
					under = append(under, k)
				}
			}
			if len(under) > 0 {
				// In key order, each once, as Redis's per-prefix table
				// (a radix tree) holds them.
				slices.SortFunc(under, bytes.Compare)
				t.deliverGroup(tc, slices.CompactFunc(under, bytes.Equal))
			}
		}
	}
	t.seen(by)
}

// deliver queues the invalidation of key (nil: everything) for tc, on its
// redirection's connection if it has one. Under t.mu.
func (t *tracker) deliver(tc *trackClient, key []byte) {
	if target := t.target(tc); target != nil {
		target.push.add(key, key == nil, 0)
	}
}

// deliverGroup queues the invalidation of keys, in one push, for tc.
// Under t.mu.
func (t *tracker) deliverGroup(tc *trackClient, keys [][]byte) {
	if target := t.target(tc); target != nil {
		target.push.addGroup(keys)
	}
}

// target is the connection tc's invalidations go to: its redirection's,
// or its own; nil when the redirection is gone (tc is then told so).
// Under t.mu.
func (t *tracker) target(tc *trackClient) *conn {
	if tc.redirect == 0 {
		return tc.c
	}
	target := t.s.connByID(tc.redirect)
	if target == nil {
		tc.c.trackBroken.Store(true)
		tc.c.push.add(nil, false, tc.redirect) // Redis's tracking-redir-broken
	}
	return target
}

// remember notes that c read keys, before it reads them. A key past the
// node's bound makes room by forgetting another, whose readers are told to
// invalidate it.
func (t *tracker) remember(c *conn, keys [][]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tick++
	me := keyReader{c.id, t.tick}
	for _, k := range keys {
		rs, ok := t.keys[string(k)]
		if ok {
			if i := readerIndex(rs, c.id); i >= 0 {
				rs[i] = me
			} else {
				t.keys[string(k)] = append(rs, me)
			}
			continue
		}
		for len(t.keys) >= t.s.cfg.TrackingMaxKeys {
			t.evictOne()
		}
		t.keys[string(k)] = []keyReader{me}
	}
}

// evictOne forgets one remembered key (the map's choice: Redis too evicts
// at random) and tells its readers. Under t.mu.
func (t *tracker) evictOne() {
	for k, rs := range t.keys {
		delete(t.keys, k)
		for _, r := range rs {
			if tc := t.clients[r.id]; tc != nil && !tc.bcast {
				t.deliver(tc, []byte(k))
			}
		}
		return
	}
}

// readerIndex is the index of connection id in rs, -1 if none.
func readerIndex(rs []keyReader, id int64) int {
	return slices.IndexFunc(rs, func(r keyReader) bool { return r.id == id })
}

// set records c's tracking state (on, or off when tr.on is false).
func (t *tracker) set(c *conn, tr *tracking) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, was := t.clients[c.id]
	delete(t.bcast, c.id)
	if was {
		t.dropLoops(old)
	}
	if !tr.on {
		if was {
			delete(t.clients, c.id)
			t.active.Add(-1)
		}
		return
	}
	tc := &trackClient{c: c, redirect: tr.redirect, bcast: tr.bcast, noloop: tr.noloop}
	for _, p := range tr.prefixes {
		tc.prefixes = append(tc.prefixes, []byte(p))
	}
	t.clients[c.id] = tc
	if tc.bcast {
		t.bcast[c.id] = tc
	}
	if !was {
		t.active.Add(1)
	}
}

// stats are Redis's INFO figures of the table: the keys remembered,
// their readers (a key read by two connections is two items), and the
// distinct prefixes of BCAST connections.
func (t *tracker) stats() (keys, items, prefixes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, rs := range t.keys {
		items += len(rs)
	}
	seen := map[string]bool{}
	for _, tc := range t.bcast {
		for _, p := range tc.prefixes {
			seen[string(p)] = true
		}
	}
	return len(t.keys), items, len(seen)
}

// size is the number of remembered keys.
func (t *tracker) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.keys)
}

// trackWanted says whether the command c runs now has its read keys
// remembered: tracking on, not BCAST, and OPTIN's CLIENT CACHING YES given
// or OPTOUT's CLIENT CACHING NO not given.
func (c *conn) trackWanted() bool {
	tr := &c.track
	return tr.on && !tr.bcast && !(tr.optin && !tr.caching) && !(tr.optout && tr.caching)
}

// trackRead remembers the keys of a read command c is about to run.
func (c *conn) trackRead(cmd *redisCommand, args [][]byte) {
	if cmd.firstKey <= 0 || !c.trackWanted() {
		return
	}
	last := cmd.lastKey
	if last < 0 {
		last = len(args) + last
	}
	var keys [][]byte
	for i := cmd.firstKey; i <= last && i < len(args); i += cmd.step {
		keys = append(keys, args[i])
	}
	c.s.track.remember(c, keys)
}

// commandDone ends what CLIENT CACHING gave for one command: it lasts
// through CLIENT's own commands and, inside MULTI, to EXEC (Redis).
func (c *conn) commandDone(name string) {
	if c.track.caching && c.multi == nil && name != "client" {
		c.track.caching = false
	}
}

// clientTracking is CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST]
// [PREFIX p]... [OPTIN] [OPTOUT] [NOLOOP], with Redis's checks in
// Redis's order.
func (c *conn) clientTracking(a [][]byte) {
	var (
		redirect                     int64
		bcast, optin, optout, noloop bool
		prefixes                     []string
	)
	for j := 3; j < len(a); j++ {
		more := len(a) - 1 - j
		switch opt := strings.ToLower(string(a[j])); {
		case opt == "redirect" && more > 0:
			j++
			if redirect != 0 {
				c.w.errorLine(msgTrackRedirTwice)
				return
			}
			id, err := strconv.ParseInt(string(a[j]), 10, 64)
			if err != nil {
				c.w.errorLine("ERR value is not an integer or out of range")
				return
			}
			if c.s.connByID(id) == nil {
				c.w.errorLine(msgTrackRedirGone)
				return
			}
			redirect = id
		case opt == "bcast":
			bcast = true
		case opt == "optin":
			optin = true
		case opt == "optout":
			optout = true
		case opt == "noloop":
			noloop = true
		case opt == "prefix" && more > 0:
			j++
			prefixes = append(prefixes, string(a[j]))
		default:
			c.w.errorLine(msgSyntax)
			return
		}
	}
	tr := &c.track
	switch strings.ToLower(string(a[2])) {
	case "on":
		switch {
		case !bcast && len(prefixes) > 0:
			c.w.errorLine(msgTrackPrefixNoBcast)
			return
		case tr.on && tr.bcast != bcast:
			c.w.errorLine(msgTrackBcastSwitch)
			return
		case bcast && (optin || optout):
			c.w.errorLine(msgTrackBcastOpt)
			return
		case optin && optout:
			c.w.errorLine(msgTrackBothOpt)
			return
		case (optin && tr.optout) || (optout && tr.optin):
			c.w.errorLine(msgTrackOptSwitch)
			return
		}
		if bcast {
			if msg := prefixCollision(tr.prefixes, prefixes); msg != "" {
				c.w.errorLine(msg)
				return
			}
		}
		// Tracking begins after every write acknowledged before it: on
		// a follower, such a write (a FLUSHALL this client just made)
		// may not be applied here yet, and its invalidation, pushed to
		// the client once applied, would come after the OK, as if the
		// write had followed it (Redis's order: one thread).
		if err := c.trackBarrier(); err != nil {
			c.w.errorLine(errorReply(err))
			return
		}
		// As Redis's enableTracking: the flags are replaced, the prefixes
		// added to those the connection has ("" when none is given).
		tr.on, tr.redirect, tr.bcast, tr.optin, tr.optout, tr.noloop = true, redirect, bcast, optin, optout, noloop
		if bcast {
			if len(prefixes) == 0 {
				prefixes = []string{""}
			}
			for _, p := range prefixes {
				if !containsString(tr.prefixes, p) {
					tr.prefixes = append(tr.prefixes, p)
				}
			}
			sort.Strings(tr.prefixes)
		}
	case "off":
		*tr = tracking{}
	default:
		c.w.errorLine(msgSyntax)
		return
	}
	c.trackBroken.Store(false) // as Redis: enabling or disabling clears it
	c.s.track.set(c, tr)
	c.w.ok()
}

// trackBarrier waits until this node has applied every write
// acknowledged before the call (a READONLY connection reads this node's
// state as it is, and waits for nothing).
func (c *conn) trackBarrier() error {
	if c.readonly {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.OpTimeout)
	defer cancel()
	return c.s.store.Barrier(ctx)
}

// prefixCollision is Redis's refusal of BCAST prefixes of which one is a
// prefix of another, the connection's or the new ones: "" when none.
func prefixCollision(have, add []string) string {
	for i, p := range add {
		for _, h := range have {
			if strings.HasPrefix(h, p) || strings.HasPrefix(p, h) {
				return fmt.Sprintf("ERR Prefix '%s' overlaps with an existing prefix '%s'. Prefixes for a single client must not overlap.", p, h)
			}
		}
		for _, q := range add[i+1:] {
			if strings.HasPrefix(q, p) || strings.HasPrefix(p, q) {
				return fmt.Sprintf("ERR Prefix '%s' overlaps with another provided prefix '%s'. Prefixes for a single client must not overlap.", p, q)
			}
		}
	}
	return ""
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// clientCaching is CLIENT CACHING YES|NO.
func (c *conn) clientCaching(opt []byte) {
	tr := &c.track
	switch o := strings.ToLower(string(opt)); {
	case !tr.on:
		c.w.errorLine(msgCachingNotTracking)
	case o == "yes" && !tr.optin:
		c.w.errorLine(msgCachingYes)
	case o == "no" && !tr.optout:
		c.w.errorLine(msgCachingNo)
	case o == "yes" || o == "no":
		tr.caching = true
		c.w.ok()
	default:
		c.w.errorLine(msgSyntax)
	}
}

// clientGetRedir is CLIENT GETREDIR: the redirection, 0 for none, -1 when
// not tracking.
func (c *conn) clientGetRedir() {
	if !c.track.on {
		c.w.integer(-1)
		return
	}
	c.w.integer(c.track.redirect)
}

// clientTrackingInfo is CLIENT TRACKINGINFO, in Redis's shape.
func (c *conn) clientTrackingInfo() {
	tr := &c.track
	flags := []string{"off"}
	if tr.on {
		flags[0] = "on"
	}
	if tr.bcast {
		flags = append(flags, "bcast")
	}
	if tr.optin {
		flags = append(flags, "optin")
		if tr.caching {
			flags = append(flags, "caching-yes")
		}
	}
	if tr.optout {
		flags = append(flags, "optout")
		if tr.caching {
			flags = append(flags, "caching-no")
		}
	}
	if tr.noloop {
		flags = append(flags, "noloop")
	}
	if tr.on && c.trackBroken.Load() {
		flags = append(flags, "broken_redirect")
	}
	c.w.mapHeader(3)
	c.w.bulkString("flags")
	c.w.set(len(flags))
	for _, f := range flags {
		c.w.bulkString(f)
	}
	c.w.bulkString("redirect")
	c.clientGetRedir()
	c.w.bulkString("prefixes")
	c.w.array(len(tr.prefixes))
	for _, p := range tr.prefixes {
		c.w.bulkString(p)
	}
}

// maxPendingBytes bounds the bytes of the keys waiting to be pushed to one
// connection, beside TrackingMaxPending's count: past it, "everything".
const maxPendingBytes = 4 << 20

// pushSink is a connection's invalidations waiting to be written.
type pushSink struct {
	mu      sync.Mutex
	keys    [][]byte // copies
	sizes   []int    // how many of keys each push holds, in order (a BCAST prefix's gather several)
	bytes   int      // their length
	all     bool     // "everything" is due: it covers keys
	broken  int64    // a redirection found gone: tracking-redir-broken is due
	max     int      // pending keys past which "everything" is due instead
	started bool     // the pusher runs
	closed  bool     // the connection is gone: nothing more is queued
	wake    chan struct{}
	done    chan struct{}
	c       *conn
	// acct counts the keys queued and being written against the
	// listener's budget (budget.go), queued what of it the queued keys
	// hold; a key it cannot give room to makes "everything" due instead.
	acct   account
	queued int64
	// msgs are the Pub/Sub messages waiting (pubsub.go), msgBytes what
	// they cost; dropped: the subscriber fell past its bound and its
	// connection was closed.
	msgs     []psMsg
	msgBytes int64
	dropped  bool
}

// close ends the sink with its connection.
func (p *pushSink) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.done)
		p.keys, p.sizes, p.msgs = nil, nil, nil
		p.acct.keep(0)
	}
}

// add queues the invalidation of key (all: everything; broken: the
// redirection that is gone) and wakes c's pusher. It never blocks on the
// client.
func (p *pushSink) add(key []byte, all bool, broken int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	switch {
	case broken != 0:
		p.broken = broken
	case all:
		p.dropKeysLocked()
	case !p.all && p.queueLocked(key):
		p.sizes = append(p.sizes, 1)
	}
	p.wakeLocked()
}

// addGroup queues the invalidation of keys as one push, and wakes c's
// pusher. It never blocks on the client.
func (p *pushSink) addGroup(keys [][]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	n := 0
	for _, k := range keys {
		if p.all || !p.queueLocked(k) {
			break
		}
		n++
	}
	if !p.all && n > 0 {
		p.sizes = append(p.sizes, n)
	}
	p.wakeLocked()
}

// queueLocked queues key, or, past the bounds, makes "everything" due
// instead (false). Under p.mu, with p.all false.
func (p *pushSink) queueLocked(key []byte) bool {
	if len(p.keys) >= p.max || p.bytes+len(key) > maxPendingBytes || !p.acct.charge(len(key)+sliceOverhead) {
		p.dropKeysLocked()
		return false
	}
	p.keys = append(p.keys, bytes.Clone(key))
	p.bytes += len(key)
	p.queued += int64(len(key) + sliceOverhead)
	return true
}

// dropKeysLocked makes "everything" due, which covers the keys queued.
// Under p.mu.
func (p *pushSink) dropKeysLocked() {
	p.acct.release(p.queued)
	p.all, p.keys, p.sizes, p.bytes, p.queued = true, nil, nil, 0, 0
}

// wakeLocked starts c's pusher, or wakes it, for what was just queued.
// Under p.mu.
func (p *pushSink) wakeLocked() {
	if !p.started {
		p.started = true
		go p.c.pusher()
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// pusher writes c's pending invalidations as they come, until the
// connection ends.
func (c *conn) pusher() {
	p := &c.push
	for {
		select {
		case <-p.done:
			return
		case <-p.wake:
		}
		// What waits is taken under the write lock, not before it: a
		// connection's goroutine that holds the lock (a PUBLISH to a
		// channel it is subscribed to) may take and write the rest of a
		// publish's messages first, and the client would see them out
		// of order around its reply.
		c.wmu.Lock()
		p.mu.Lock()
		keys, sizes, all, broken, held := p.keys, p.sizes, p.all, p.broken, p.queued
		msgs := p.msgs
		held += p.msgBytes
		p.keys, p.sizes, p.all, p.broken, p.bytes, p.queued = nil, nil, false, 0, 0, 0
		p.msgs, p.msgBytes = nil, 0
		p.mu.Unlock()
		err := c.writePushes(keys, sizes, all, broken, msgs)
		c.wmu.Unlock()
		p.mu.Lock()
		p.acct.release(held) // the keys and messages written are given back
		p.mu.Unlock()
		if err != nil {
			c.nc.Close() // a client that does not read its pushes is dropped
			return
		}
	}
}

// errNotReading: the client took none of what waits for it in its
// socket for WriteTimeout (peer.go).
var errNotReading = errors.New("the client reads nothing of what is written to it")

// takeMessages takes the Pub/Sub messages waiting, to be written by the
// connection's own goroutine (which holds the write lock), giving back
// what they held.
func (p *pushSink) takeMessages() []psMsg {
	p.mu.Lock()
	defer p.mu.Unlock()
	msgs := p.msgs
	p.acct.release(p.msgBytes)
	p.msgs, p.msgBytes = nil, 0
	return msgs
}

// writePushes writes invalidations and Pub/Sub messages; under the write
// lock, so after any reply being made. A RESP2 connection gets invalidations
// only while it is subscribed (a tracking client's REDIRECT to it), as
// messages of __redis__:invalidate, as Redis sends them.
func (c *conn) writePushes(keys [][]byte, sizes []int, all bool, broken int64, msgs []psMsg) error {
	if c.proto < 3 && len(msgs) == 0 && !c.subs.any() {
		return nil
	}
	if c.out.stalled(time.Now()) {
		return errNotReading
	}
	c.writeMessages(msgs)
	if c.proto < 3 {
		c.writeInvalidateMessages(keys, sizes, all)
		return c.flush()
	}
	if broken != 0 {
		c.w.push(2)
		c.w.bulkString("tracking-redir-broken")
		c.w.integer(broken)
	}
	if all {
		c.w.push(2)
		c.w.bulkString("invalidate")
		c.w.null()
	}
	for _, n := range sizes {
		c.w.push(2)
		c.w.bulkString("invalidate")
		c.w.array(n)
		for _, k := range keys[:n] {
			c.w.bulk(k)
		}
		keys = keys[n:]
	}
	return c.flush() // each write to the socket has its own WriteTimeout (deadlineWriter)
}
