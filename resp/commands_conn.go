package resp

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/version"
)

// The commands of the connection and the node: no store involved.

// redisVersion is the Redis version whose protocol and replies this
// listener follows; clients read it from HELLO and INFO.
const redisVersion = "7.0.0"

func init() {
	register(
		&redisCommand{name: "ping", arity: -1, kind: kindConn, script: true, flags: []string{"fast"}, preAuth: true, conn: cmdPing},
		&redisCommand{name: "echo", arity: 2, kind: kindConn, script: true, flags: []string{"fast"}, conn: func(c *conn, a [][]byte) { c.w.bulk(a[1]) }},
		&redisCommand{name: "hello", arity: -1, kind: kindConn, flags: []string{"noscript", "loading", "stale", "fast", "no_auth"}, preAuth: true, conn: cmdHello},
		&redisCommand{name: "auth", arity: -2, kind: kindConn, flags: []string{"noscript", "loading", "stale", "fast", "no_auth"}, preAuth: true, conn: cmdAuth},
		&redisCommand{name: "quit", arity: -1, kind: kindConn, flags: []string{"loading", "stale", "fast", "no_auth"}, preAuth: true,
			conn: func(c *conn, _ [][]byte) { c.w.ok(); c.quit = true }},
		&redisCommand{name: "select", arity: 2, kind: kindConn, flags: []string{"loading", "stale", "fast"}, conn: cmdSelect},
		&redisCommand{name: "readonly", arity: 1, kind: kindConn, flags: []string{"loading", "stale", "fast"},
			conn: func(c *conn, _ [][]byte) { c.readonly = true; c.w.ok() }},
		&redisCommand{name: "readwrite", arity: 1, kind: kindConn, flags: []string{"loading", "stale", "fast"},
			conn: func(c *conn, _ [][]byte) { c.readonly = false; c.w.ok() }},
		&redisCommand{name: "client", arity: -2, kind: kindConn, flags: []string{"loading", "stale"}, conn: cmdClient},
		&redisCommand{name: "command", arity: -1, kind: kindConn, flags: []string{"loading", "stale"}, conn: cmdCommand},
		&redisCommand{name: "info", arity: -1, kind: kindConn, flags: []string{"loading", "stale"}, conn: cmdInfo},
		&redisCommand{name: "config", arity: -2, kind: kindConn, flags: []string{"loading", "stale"}, conn: cmdConfig},
	)
}

func cmdPing(c *conn, a [][]byte) {
	if c.proto < 3 && c.subs.any() && len(a) <= 2 {
		// In RESP2's subscribe mode, as a message: "pong" and its
		// argument ("" without one).
		c.w.array(2)
		c.w.bulkString("pong")
		if len(a) == 1 {
			c.w.bulkString("")
		} else {
			c.w.bulk(a[1])
		}
		return
	}
	switch len(a) {
	case 1:
		c.w.simple("PONG")
	case 2:
		c.w.bulk(a[1])
	default:
		c.w.errorLine("ERR wrong number of arguments for 'ping' command")
	}
}

// cmdSelect moves the connection to keyspace n (keyspace.go). Inside
// MULTI it runs in its place at EXEC, and the commands queued after it
// were planned in its keyspace (exec).
func cmdSelect(c *conn, a [][]byte) {
	db, refusal := parseDB(a[1])
	if refusal != "" {
		c.w.errorLine(refusal)
		return
	}
	c.db = db
	c.w.ok()
}

// parseDB reads a keyspace number as Redis reads one (SELECT, COPY ...
// DB, MOVE): a canonical decimal int, 0 to 15; else the refusal, word for
// word Redis's.
func parseDB(b []byte) (int, string) {
	n, ok := parseInt64(b)
	switch {
	case !ok || strconv.FormatInt(n, 10) != string(b):
		return 0, msgNotInteger
	case n != int64(int32(n)):
		return 0, msgIntRange
	case n < 0 || n >= command.Keyspaces:
		return 0, msgDBRange
	}
	return int(n), ""
}

// cmdAuth: AUTH secret, or AUTH user secret where user is "default" or
// the token's name.
func cmdAuth(c *conn, a [][]byte) {
	if len(a) > 3 {
		c.w.errorLine(msgSyntax)
		return
	}
	user, secret := "default", a[len(a)-1]
	if len(a) == 3 {
		user = string(a[1])
	}
	if msg := c.authenticate(user, secret, len(a) == 2); msg != "" {
		c.w.errorLine(msg)
		return
	}
	c.w.ok()
}

// cmdHello: HELLO [protover [AUTH user secret] [SETNAME name]].
func cmdHello(c *conn, a [][]byte) {
	proto := c.proto
	if len(a) > 1 {
		v, err := strconv.Atoi(string(a[1]))
		if err != nil {
			c.w.errorLine("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			c.w.errorLine(msgNoProto)
			return
		}
		proto = v
	}
	var name []byte
	setName := false
	for i := 2; i < len(a); i++ {
		switch opt := strings.ToLower(string(a[i])); {
		case opt == "auth" && i+2 < len(a):
			if msg := c.authenticate(string(a[i+1]), a[i+2], false); msg != "" {
				c.w.errorLine(msg)
				return
			}
			i += 2
		case opt == "setname" && i+1 < len(a):
			name, setName = a[i+1], true
			i++
		default:
			c.w.errorLine(fmt.Sprintf("ERR Syntax error in HELLO option '%s'", clip(a[i])))
			return
		}
	}
	if c.preAuth() {
		c.w.errorLine("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName {
		if msg := checkName(name); msg != "" {
			c.w.errorLine(msg)
			return
		}
		c.rename(func(n *connNames) { n.name = string(name) })
	}
	c.proto, c.w.proto = proto, proto
	role := "master"
	if id, _ := c.s.store.Leader(); id != c.s.cfg.NodeID {
		role = "replica"
	}
	c.w.mapHeader(7)
	c.w.bulkString("server")
	c.w.bulkString("idemgate")
	c.w.bulkString("version")
	c.w.bulkString(redisVersion)
	c.w.bulkString("proto")
	c.w.integer(int64(proto))
	c.w.bulkString("id")
	c.w.integer(c.id)
	c.w.bulkString("mode")
	c.w.bulkString("standalone")
	c.w.bulkString("role")
	c.w.bulkString(role)
	c.w.bulkString("modules")
	c.w.array(0)
}

// checkName: a client name may not hold spaces or newlines (Redis).
func checkName(b []byte) string {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return "ERR Client names cannot contain spaces, newlines or special characters."
		}
	}
	return ""
}

func cmdClient(c *conn, a [][]byte) {
	sub := strings.ToLower(string(a[1]))
	switch {
	case sub == "setname" && len(a) == 3:
		if msg := checkName(a[2]); msg != "" {
			c.w.errorLine(msg)
			return
		}
		c.rename(func(n *connNames) { n.name = string(a[2]) })
		c.w.ok()
	case sub == "getname" && len(a) == 2:
		if name := c.named().name; name != "" {
			c.w.bulkString(name)
			return
		}
		c.w.null()
	case sub == "id" && len(a) == 2:
		c.w.integer(c.id)
	case sub == "info" && len(a) == 2:
		c.w.verbatim(c.info() + "\n")
	case sub == "list":
		c.clientList(a[2:])
	case sub == "setinfo" && len(a) == 4:
		attr := strings.ToLower(string(a[2]))
		if attr != "lib-name" && attr != "lib-ver" {
			c.w.errorLine(fmt.Sprintf("ERR Unrecognized option '%s'", clip(a[2])))
			return
		}
		if msg := checkName(a[3]); msg != "" {
			c.w.errorLine(msg)
			return
		}
		c.rename(func(n *connNames) {
			if attr == "lib-name" {
				n.libName = string(a[3])
			} else {
				n.libVer = string(a[3])
			}
		})
		c.w.ok()
	case (sub == "tracking" && len(a) < 3) || ((sub == "caching" || sub == "reply") && len(a) != 3) ||
		((sub == "getredir" || sub == "trackinginfo") && len(a) != 2):
		c.w.errorLine(fmt.Sprintf("ERR wrong number of arguments for 'client|%s' command", sub))
	case sub == "reply":
		c.clientReply(a[2])
	case sub == "tracking":
		c.clientTracking(a)
	case sub == "caching":
		c.clientCaching(a[2])
	case sub == "getredir":
		c.clientGetRedir()
	case sub == "trackinginfo":
		c.clientTrackingInfo()
	default:
		c.w.errorLine(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try CLIENT HELP.", clip(a[1])))
	}
}

// info is the connection's CLIENT INFO line, in Redis's format (the
// fields idemgate has).
func (c *conn) info() string {
	user := "default"
	if sess := c.sess.Load(); sess != nil {
		user = sess.grant.Name
	}
	flags := "N"
	if c.readonly {
		flags = "r" // Redis's flag of a READONLY connection
	}
	n := c.named()
	return fmt.Sprintf("id=%d addr=%s laddr=%s name=%s age=%d flags=%s db=%d cmd=client|info user=%s resp=%d lib-name=%s lib-ver=%s",
		c.id, c.nc.RemoteAddr(), c.nc.LocalAddr(), n.name, int(time.Since(c.created).Seconds()), flags, c.db, user, c.proto,
		n.libName, n.libVer)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cmdCommand: COMMAND, COMMAND COUNT, COMMAND INFO name..., COMMAND DOCS
// (no docs: an empty map, which redis-cli takes as "no hints"), COMMAND
// LIST.
func cmdCommand(c *conn, a [][]byte) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	sub := ""
	if len(a) > 1 {
		sub = strings.ToLower(string(a[1]))
	}
	switch sub {
	case "":
		c.w.array(len(names))
		for _, n := range names {
			c.commandInfo(commands[n])
		}
	case "count":
		c.w.integer(int64(len(names)))
	case "list":
		c.w.array(len(names))
		for _, n := range names {
			c.w.bulkString(n)
		}
	case "info":
		c.w.array(len(a) - 2)
		for _, n := range a[2:] {
			if cmd, ok := commands[strings.ToLower(string(n))]; ok {
				c.commandInfo(cmd)
			} else {
				c.w.null()
			}
		}
	case "docs":
		c.w.mapHeader(0)
	default:
		c.w.errorLine(fmt.Sprintf("ERR unknown subcommand '%s'. Try COMMAND HELP.", clip(a[1])))
	}
}

// commandInfo is one command's COMMAND entry, Redis 7's ten fields.
func (c *conn) commandInfo(cmd *redisCommand) {
	c.w.array(10)
	c.w.bulkString(cmd.name)
	c.w.integer(int64(cmd.arity))
	flags := cmd.flags
	switch cmd.kind {
	case kindRead:
		flags = append([]string{"readonly"}, flags...)
	case kindWrite:
		flags = append([]string{"write"}, flags...)
	}
	c.w.array(len(flags))
	for _, f := range flags {
		c.w.simple(f)
	}
	c.w.integer(int64(cmd.firstKey))
	c.w.integer(int64(cmd.lastKey))
	c.w.integer(int64(cmd.step))
	for i := 0; i < 4; i++ { // ACL categories, tips, key specs, subcommands
		c.w.array(0)
	}
}

// cmdInfo: the server, clients, memory, stats, errorstats and
// replication sections (of memory, the script cache's figures; of stats,
// the client-side caching table's and total_error_replies; each this
// node's).
func cmdInfo(c *conn, a [][]byte) {
	want := map[string]bool{}
	for _, s := range a[1:] {
		want[strings.ToLower(string(s))] = true
	}
	all := len(want) == 0 || want["all"] || want["default"] || want["everything"]
	var b strings.Builder
	if all || want["server"] {
		_, port, _ := strings.Cut(c.s.Addr(), ":")
		fmt.Fprintf(&b, "# Server\r\nredis_version:%s\r\nidemgate_version:%s\r\nredis_mode:standalone\r\nos:%s %s\r\n"+
			"process_id:%d\r\ntcp_port:%s\r\nuptime_in_seconds:%d\r\nidemgate_node:%s\r\n\r\n",
			redisVersion, version.String(), runtime.GOOS, runtime.GOARCH, os.Getpid(), port,
			int(time.Since(c.s.start).Seconds()), c.s.cfg.NodeID)
	}
	if all || want["clients"] {
		fmt.Fprintf(&b, "# Clients\r\nconnected_clients:%d\r\nblocked_clients:%d\r\ntracking_clients:%d\r\n\r\n",
			c.s.clients(), c.s.blocks.blocked(), c.s.track.active.Load())
	}
	if all || want["stats"] {
		keys, items, prefixes := c.s.track.stats()
		fmt.Fprintf(&b, "# Stats\r\ntracking_total_keys:%d\r\ntracking_total_items:%d\r\ntracking_total_prefixes:%d\r\ntotal_error_replies:%d\r\n\r\n",
			keys, items, prefixes, c.s.errs.totalReplies())
	}
	if all || want["memory"] {
		// Nothing is ever evicted: a write past a limit is refused.
		// BullMQ warns unless it reads noeviction here. The scripts are
		// this node's cache's (EVAL, SCRIPT LOAD), the bytes their cost.
		scripts, bytes, _ := c.s.scripts.size()
		fmt.Fprintf(&b, "# Memory\r\nused_memory_scripts_eval:%d\r\nnumber_of_cached_scripts:%d\r\nmaxmemory_policy:noeviction\r\n\r\n",
			bytes, scripts)
	}
	if all || want["errorstats"] {
		c.s.errs.section(&b)
	}
	if all || want["replication"] {
		id, _ := c.s.store.Leader()
		role := "master"
		if id != c.s.cfg.NodeID {
			role = "slave"
		}
		fmt.Fprintf(&b, "# Replication\r\nrole:%s\r\nidemgate_leader:%s\r\nidemgate_writes:every node (followers forward to the leader)\r\n\r\n", role, id)
	}
	c.w.verbatim(strings.TrimSuffix(b.String(), "\r\n"))
}

// cmdConfig: CONFIG GET answers no parameter (redis-benchmark asks for
// save and appendonly, and goes on without them); CONFIG RESETSTAT
// empties the node's error counts (INFO errorstats, total_error_replies),
// the admin role's, as Redis's is an admin command; the rest is refused.
func cmdConfig(c *conn, a [][]byte) {
	switch sub := strings.ToLower(string(a[1])); {
	case sub == "get" && len(a) >= 3:
		c.w.mapHeader(0)
		return
	case sub == "resetstat" && len(a) != 2:
		c.w.errorLine("ERR wrong number of arguments for 'config|resetstat' command")
		return
	case sub == "resetstat":
		if sess := c.sess.Load(); sess != nil && !sess.grant.Admin {
			c.w.errorLine(fmt.Sprintf("NOPERM User %s has no permissions to run the 'config|resetstat' command", sess.grant.Name))
			return
		}
		c.s.errs.reset()
		c.w.ok()
		return
	}
	c.w.errorLine("ERR CONFIG " + strings.ToUpper(clip(a[1])) + " is not supported by idemgate: its settings are in the cluster file")
}
