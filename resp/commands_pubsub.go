package resp

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// The Pub/Sub commands (pubsub.go has the model) and RESET.

func init() {
	sub := []string{"pubsub", "noscript", "loading", "stale"}
	pub := []string{"pubsub", "loading", "stale", "fast"}
	register(
		&redisCommand{name: "subscribe", arity: -2, kind: kindConn, flags: sub,
			conn: func(c *conn, a [][]byte) { c.subscribe(subChannels, a[1:]) }},
		&redisCommand{name: "psubscribe", arity: -2, kind: kindConn, flags: sub,
			conn: func(c *conn, a [][]byte) { c.subscribe(subPatterns, a[1:]) }},
		&redisCommand{name: "ssubscribe", arity: -2, kind: kindConn, flags: sub,
			conn: func(c *conn, a [][]byte) { c.subscribe(subShard, a[1:]) }},
		&redisCommand{name: "unsubscribe", arity: -1, kind: kindConn, flags: sub,
			conn: func(c *conn, a [][]byte) { c.unsubscribe(subChannels, a[1:]) }},
		&redisCommand{name: "punsubscribe", arity: -1, kind: kindConn, flags: sub,
			conn: func(c *conn, a [][]byte) { c.unsubscribe(subPatterns, a[1:]) }},
		&redisCommand{name: "sunsubscribe", arity: -1, kind: kindConn, flags: sub,
			conn: func(c *conn, a [][]byte) { c.unsubscribe(subShard, a[1:]) }},
		&redisCommand{name: "publish", arity: 3, kind: kindConn, flags: pub, write: true,
			conn: func(c *conn, a [][]byte) { c.publish(false, a) }},
		&redisCommand{name: "spublish", arity: 3, kind: kindConn, flags: pub, write: true,
			conn: func(c *conn, a [][]byte) { c.publish(true, a) }},
		&redisCommand{name: "pubsub", arity: -2, kind: kindConn, flags: []string{"pubsub", "loading", "stale"},
			sub: pubsubSub, conn: cmdPubSub},
		&redisCommand{name: "reset", arity: 1, kind: kindConn, flags: []string{"noscript", "loading", "stale", "fast", "no_auth"},
			preAuth: true, conn: cmdReset},
	)
}

// publish is PUBLISH and SPUBLISH: delivered here, then carried to the
// other nodes; the reply counts this node's receivers.
func (c *conn) publish(shard bool, a [][]byte) {
	// The request's buffers are not the subscribers': they outlive it.
	ch, msg := bytes.Clone(a[1]), bytes.Clone(a[2])
	n := c.s.ps.publish(shard, ch, msg, true)
	if c.s.bcast != nil {
		c.s.bcast.Broadcast(shard, ch, msg)
	}
	// A subscriber that publishes gets its own message before the reply,
	// as from Redis (which writes it at once): what waits for it is
	// written now, in its order.
	if c.subs.any() {
		c.writeMessages(c.push.takeMessages())
	}
	c.w.integer(int64(n))
}

// pubsubSubs are PUBSUB's subcommands and their arities, as Redis's
// command table has them.
var pubsubSubs = map[string]int{"channels": -2, "numpat": 2, "numsub": -2, "shardchannels": -2, "shardnumsub": -2, "help": 2}

func pubsubSub(a [][]byte) string {
	sub := strings.ToLower(string(a[1]))
	arity, ok := pubsubSubs[sub]
	switch {
	case !ok:
		return fmt.Sprintf(msgPubSubSub, clip(a[1]))
	case (arity > 0 && len(a) != arity) || (arity < 0 && len(a) < -arity):
		return fmt.Sprintf("ERR wrong number of arguments for 'pubsub|%s' command", sub)
	}
	return ""
}

var pubsubHelp = []string{
	"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CHANNELS [<pattern>]",
	"    Return the currently active channels matching a <pattern> (default: '*').",
	"NUMPAT",
	"    Return number of subscriptions to patterns.",
	"NUMSUB [<channel> ...]",
	"    Return the number of subscribers for the specified channels, excluding",
	"    pattern subscriptions(default: no channels).",
	"SHARDCHANNELS [<pattern>]",
	"    Return the currently active shard level channels matching a <pattern> (default: '*').",
	"SHARDNUMSUB [<shardchannel> ...]",
	"    Return the number of subscribers for the specified shard level channel(s)",
	"HELP",
	"    Prints this help.",
}

// cmdPubSub is PUBSUB's subcommands, of this node's subscribers (as
// Redis Cluster's node answers them).
func cmdPubSub(c *conn, a [][]byte) {
	ps := c.s.ps
	switch sub := strings.ToLower(string(a[1])); sub {
	case "help":
		c.w.array(len(pubsubHelp))
		for _, l := range pubsubHelp {
			c.w.simple(l)
		}
	case "channels", "shardchannels":
		if len(a) > 3 {
			c.w.errorLine(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try PUBSUB HELP.", clip(a[1])))
			return
		}
		ps.mu.RLock()
		t := ps.channels
		if sub == "shardchannels" {
			t = ps.shard
		}
		var names []string
		for name := range t {
			if len(a) == 2 || globMatch(a[2], []byte(name)) {
				names = append(names, name)
			}
		}
		ps.mu.RUnlock()
		sort.Strings(names)
		c.w.array(len(names))
		for _, n := range names {
			c.w.bulkString(n)
		}
	case "numpat":
		ps.mu.RLock()
		n := len(ps.patterns)
		ps.mu.RUnlock()
		c.w.integer(int64(n))
	case "numsub", "shardnumsub":
		ps.mu.RLock()
		t := ps.channels
		if sub == "shardnumsub" {
			t = ps.shard
		}
		counts := make([]int, len(a)-2)
		for i, name := range a[2:] {
			counts[i] = len(t[string(name)])
		}
		ps.mu.RUnlock()
		c.w.array(2 * len(counts)) // an array in RESP3 too, as Redis 7.0 answers
		for i, name := range a[2:] {
			c.w.bulk(name)
			c.w.integer(int64(counts[i]))
		}
	}
}

// cmdReset is RESET: the connection as a new one's, as Redis resets it:
// no transaction, watches, subscriptions or tracking, keyspace 0, RESP2,
// no name, READWRITE, and, where AUTH is needed, not authenticated.
func cmdReset(c *conn, _ [][]byte) {
	c.multi = nil
	c.unwatch()
	c.unsubscribeAll()
	if c.track.on {
		c.track = tracking{}
		c.s.track.set(c, &c.track)
	}
	c.trackBroken.Store(false)
	c.db, c.readonly = 0, false
	c.rename(func(n *connNames) { n.name = "" })
	c.proto, c.w.proto = 2, 2
	if c.s.authFunc() != nil {
		c.sess.Store(nil)
	}
	c.w.simple("RESET")
}
