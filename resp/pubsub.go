package resp

import (
	"bytes"
	"sort"
	"strings"
	"sync"
)

// Pub/Sub: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, their UNSUBSCRIBEs, PUBLISH,
// SPUBLISH and PUBSUB, as Redis 7.0 answers them, on every node of the
// cluster as Redis Cluster gives them.
//
// A node keeps its own subscribers (pubsub, below). A PUBLISH is delivered
// to the subscribers of the node it reached, and handed to the
// Broadcaster, which carries it to every other node (raftstore's fan-out,
// beside Raft, never in its log), where it is delivered the same way.
// Nothing is stored: a message reaches the subscribers connected when it
// arrives, at most once, as Redis promises. PUBLISH's reply counts the
// clients of the node it reached, as in Redis Cluster.
//
// A message is never written by the publisher: it is queued on each
// subscriber's pushSink (bounded, below) and written by that connection's
// pusher under its write lock, after any reply being made, as tracking's
// invalidations are. So a subscribe's reply always precedes the messages
// it lets through, and a subscriber that does not read holds at most its
// bound: past it, or when the listener's client buffer (budget.go) has no
// room, it is closed, as Redis closes a client past
// client-output-buffer-limit pubsub.

const (
	msgSubscribeCtx = "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
	msgPubSubSub    = "ERR unknown subcommand '%s'. Try PUBSUB HELP."
	// invalidateChannel is where a RESP2 connection that a tracking
	// client redirects to gets its invalidations (tracking.go).
	invalidateChannel = "__redis__:invalidate"
	// maxPubSubPending bounds the bytes of messages waiting for one
	// subscriber: Redis's client-output-buffer-limit pubsub hard limit.
	maxPubSubPending = 32 << 20
	// msgOverhead is what a queued message costs beside its bytes.
	msgOverhead = 64
)

// Broadcaster carries a published message to the other nodes, where it is
// handed to the function OnBroadcast registered (*raftstore.Store
// implements it). Broadcast never waits for a peer: a message a peer cannot
// take now is lost for it, as a message is for a Redis Cluster node whose
// link is down.
type Broadcaster interface {
	Broadcast(shard bool, channel, message []byte)
	OnBroadcast(func(shard bool, channel, message []byte))
}

// psKind is what a queued message is.
type psKind byte

const (
	psMessage  psKind = iota // message channel payload
	psPMessage               // pmessage pattern channel payload
	psSMessage               // smessage channel payload
)

// psMsg is one message queued for a subscriber; its slices are shared
// among the subscribers of one publish and never written.
type psMsg struct {
	kind                      psKind
	pattern, channel, payload []byte
}

// pubsub is the node's table of subscriptions: by channel, by pattern and
// by shard channel, the connections subscribed.
type pubsub struct {
	mu       sync.RWMutex
	channels map[string]map[*conn]struct{}
	patterns map[string]map[*conn]struct{}
	shard    map[string]map[*conn]struct{}
}

func newPubSub() *pubsub {
	return &pubsub{channels: map[string]map[*conn]struct{}{}, patterns: map[string]map[*conn]struct{}{},
		shard: map[string]map[*conn]struct{}{}}
}

// subscriptions is a connection's own: its goroutine's, read by its pusher
// under the write lock.
type subscriptions struct {
	channels, patterns, shard map[string]struct{}
}

// count is Redis's clientSubscriptionsCount: channels and patterns.
func (s *subscriptions) count() int { return len(s.channels) + len(s.patterns) }

// any reports whether the connection is in subscribe mode.
func (s *subscriptions) any() bool { return s.count()+len(s.shard) > 0 }

// subKind is one of the three families: its table, its replies' words.
type subKind struct {
	sub, unsub string
	table      func(*pubsub) map[string]map[*conn]struct{}
	own        func(*subscriptions) *map[string]struct{}
	count      func(*subscriptions) int
}

var (
	subChannels = subKind{"subscribe", "unsubscribe", func(p *pubsub) map[string]map[*conn]struct{} { return p.channels },
		func(s *subscriptions) *map[string]struct{} { return &s.channels }, (*subscriptions).count}
	subPatterns = subKind{"psubscribe", "punsubscribe", func(p *pubsub) map[string]map[*conn]struct{} { return p.patterns },
		func(s *subscriptions) *map[string]struct{} { return &s.patterns }, (*subscriptions).count}
	subShard = subKind{"ssubscribe", "sunsubscribe", func(p *pubsub) map[string]map[*conn]struct{} { return p.shard },
		func(s *subscriptions) *map[string]struct{} { return &s.shard }, func(s *subscriptions) int { return len(s.shard) }}
)

// subscribe adds c's subscriptions to names, answering each.
func (c *conn) subscribe(k subKind, names [][]byte) {
	own := k.own(&c.subs)
	if *own == nil {
		*own = map[string]struct{}{}
	}
	ps := c.s.ps
	for _, n := range names {
		name := string(n)
		if _, ok := (*own)[name]; !ok {
			(*own)[name] = struct{}{}
			ps.mu.Lock()
			t := k.table(ps)
			set := t[name]
			if set == nil {
				set = map[*conn]struct{}{}
				t[name] = set
			}
			set[c] = struct{}{}
			ps.mu.Unlock()
		}
		c.subReply(k.sub, n, k.count(&c.subs))
	}
}

// unsubscribe removes c's subscriptions to names (all of the family's
// when none is named), answering each; one reply with a null name when
// there was none to remove.
func (c *conn) unsubscribe(k subKind, names [][]byte) {
	own := k.own(&c.subs)
	if len(names) == 0 {
		for name := range *own {
			names = append(names, []byte(name))
		}
		sort.Slice(names, func(i, j int) bool { return string(names[i]) < string(names[j]) })
		if len(names) == 0 {
			c.subReply(k.unsub, nil, k.count(&c.subs))
			return
		}
	}
	ps := c.s.ps
	for _, n := range names {
		name := string(n)
		if _, ok := (*own)[name]; ok {
			delete(*own, name)
			ps.mu.Lock()
			t := k.table(ps)
			if set := t[name]; set != nil {
				delete(set, c)
				if len(set) == 0 {
					delete(t, name)
				}
			}
			ps.mu.Unlock()
		}
		c.subReply(k.unsub, n, k.count(&c.subs))
	}
}

// unsubscribeAll drops every subscription of c, answering nothing (the
// connection ends, or RESET).
func (c *conn) unsubscribeAll() {
	ps := c.s.ps
	ps.mu.Lock()
	for _, k := range []subKind{subChannels, subPatterns, subShard} {
		t := k.table(ps)
		for name := range *k.own(&c.subs) {
			if set := t[name]; set != nil {
				delete(set, c)
				if len(set) == 0 {
					delete(t, name)
				}
			}
		}
	}
	ps.mu.Unlock()
	c.subs = subscriptions{}
}

// subReply is one (un)subscribe's answer: a push in RESP3, an array in
// RESP2; a nil name is a null.
func (c *conn) subReply(word string, name []byte, count int) {
	c.w.pushing(func() { // a push, even under CLIENT REPLY OFF
		c.pubsubHeader(3)
		c.w.bulkString(word)
		if name == nil {
			c.w.null()
		} else {
			c.w.bulk(name)
		}
		c.w.integer(int64(count))
	})
}

// pubsubHeader opens a Pub/Sub reply or message of n parts.
func (c *conn) pubsubHeader(n int) {
	if c.proto >= 3 {
		c.w.push(n)
	} else {
		c.w.array(n)
	}
}

// publish delivers a message to this node's subscribers: the number of
// deliveries (a client subscribed to the channel and to a pattern that
// matches it counts twice, as in Redis). Unless owned, channel and payload
// are copied before a subscriber holds them (once, when one does).
func (p *pubsub) publish(shard bool, channel, payload []byte, owned bool) int {
	own := func() {
		if !owned {
			channel, payload, owned = bytes.Clone(channel), bytes.Clone(payload), true
		}
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	n := 0
	if shard {
		for c := range p.shard[string(channel)] {
			own()
			c.push.message(psMsg{kind: psSMessage, channel: channel, payload: payload})
			n++
		}
		return n
	}
	for c := range p.channels[string(channel)] {
		own()
		c.push.message(psMsg{kind: psMessage, channel: channel, payload: payload})
		n++
	}
	for pat, set := range p.patterns {
		if !globMatch([]byte(pat), channel) {
			continue
		}
		own()
		pb := []byte(pat)
		for c := range set {
			c.push.message(psMsg{kind: psPMessage, pattern: pb, channel: channel, payload: payload})
			n++
		}
	}
	return n
}

// deliverRemote is a message another node published (the Broadcaster's
// callback); its slices are the peer's frame, copied for a subscriber that
// holds them.
func (s *Server) deliverRemote(shard bool, channel, payload []byte) {
	s.ps.publish(shard, channel, payload, false)
}

// message queues m for the connection, charging it to the connection's
// bound and the listener's budget; past either the connection is closed:
// a subscriber that does not keep up is dropped, never buffered without
// bound. It never blocks on the client.
func (p *pushSink) message(m psMsg) {
	cost := int64(len(m.pattern) + len(m.channel) + len(m.payload) + msgOverhead)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.dropped {
		return
	}
	if p.msgBytes+cost > maxPubSubPending || !p.acct.charge(int(cost)) {
		p.dropped = true
		p.c.s.m.budgetClosed.Inc()
		p.c.nc.Close() // its goroutine ends it (release)
		return
	}
	p.msgs = append(p.msgs, m)
	p.msgBytes += cost
	p.wakeLocked()
}

// writeMessages writes queued messages; under the write lock.
func (c *conn) writeMessages(msgs []psMsg) {
	if len(msgs) > 0 && c.w.real != nil {
		c.w.pushing(func() { c.writeMessages(msgs) }) // pushed, even under CLIENT REPLY OFF
		return
	}
	for _, m := range msgs {
		switch m.kind {
		case psMessage:
			c.pubsubHeader(3)
			c.w.bulkString("message")
		case psSMessage:
			c.pubsubHeader(3)
			c.w.bulkString("smessage")
		case psPMessage:
			c.pubsubHeader(4)
			c.w.bulkString("pmessage")
			c.w.bulk(m.pattern)
		}
		c.w.bulk(m.channel)
		c.w.bulk(m.payload)
	}
}

// subscribeRefusal is Redis's refusal of a command in RESP2's subscribe
// mode: "" when it may run.
func (c *conn) subscribeRefusal(name string, args [][]byte) string {
	if c.proto >= 3 || !c.subs.any() {
		return ""
	}
	switch name {
	case "ping", "subscribe", "ssubscribe", "psubscribe", "unsubscribe", "sunsubscribe", "punsubscribe", "quit", "reset":
		return ""
	}
	full := name
	if len(args) > 1 && hasSubcommands(name) {
		full += "|" + strings.ToLower(string(args[1]))
	}
	return strings.Replace(msgSubscribeCtx, "%s", full, 1)
}

// hasSubcommands: Redis names the command of a subcommand as
// "name|sub" in its refusals.
func hasSubcommands(name string) bool {
	switch name {
	case "client", "config", "command", "script", "object", "pubsub", "memory", "xinfo", "xgroup", "function", "acl", "cluster":
		return true
	}
	return false
}

// isSubscribe: the commands that enter or leave subscribe mode; they
// cannot be queued in a transaction nor called by a script.
func isSubscribe(name string) bool {
	switch name {
	case "subscribe", "ssubscribe", "psubscribe", "unsubscribe", "sunsubscribe", "punsubscribe":
		return true
	}
	return false
}

// writeInvalidateMessages writes invalidations to a RESP2 connection a
// tracking client redirects to, as messages of __redis__:invalidate
// (Redis's sendTrackingMessage): each push's keys as an array (sizes:
// how many of keys each holds), everything as a null; nothing when it is
// not subscribed. Under the write lock.
func (c *conn) writeInvalidateMessages(keys [][]byte, sizes []int, all bool) {
	if !c.subs.any() {
		return
	}
	if all {
		c.w.array(3)
		c.w.bulkString("message")
		c.w.bulkString(invalidateChannel)
		c.w.null()
	}
	for _, n := range sizes {
		c.w.array(3)
		c.w.bulkString("message")
		c.w.bulkString(invalidateChannel)
		c.w.array(n)
		for _, k := range keys[:n] {
			c.w.bulk(k)
		}
		keys = keys[n:]
	}
}
