package resp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// TestReservedKeysRefused: with an app token, every command that names a
// key refuses one that begins with a NUL byte (the audit's
// SET "\x00node/n1" evil answered OK, and /v1/cluster reads members' API
// addresses there): the store's error, for the whole command when it
// names other keys too, and nothing of it written. The reserved record is
// unchanged after every row, and commands around a refused one run.
func TestReservedKeysRefused(t *testing.T) {
	store := memstore.New(t)
	srv := startServer(t, store, "mem", func(c *Config) { c.Auth = testAuth })
	if err := store.SetNodeAPI(ctxT(t, 10*time.Second), "n1", "127.0.0.1:9001"); err != nil {
		t.Fatal(err)
	}
	const rk = "\x00node/n1"
	refused := "-ERR reserved key: keys that begin with a NUL byte are idemgate's own\r\n"
	// Every command of the table that names a key, with its arguments.
	calls := map[string][]string{
		"get": {rk}, "mget": {"plain", rk}, "exists": {"plain", rk}, "ttl": {rk}, "pttl": {rk},
		"set": {rk, "evil"}, "setnx": {rk, "evil"}, "getdel": {rk}, "del": {"plain", rk}, "unlink": {rk, "plain"},
		"incr": {rk}, "decr": {rk}, "incrby": {rk, "5"}, "decrby": {rk, "5"},
		"expire": {rk, "0"}, "pexpire": {rk, "1"}, "persist": {rk}, "watch": {"plain", rk},
		"delex": {rk, "IFEQ", "x"}, "digest": {rk},
		"expireat": {rk, "1"}, "pexpireat": {rk, "1"}, "getrange": {rk, "0", "-1"}, "strlen": {rk},
		"getset": {rk, "evil"}, "setex": {rk, "100", "evil"}, "psetex": {rk, "100", "evil"}, "getex": {rk, "PERSIST"},
		"mset": {"plain", "2", rk, "evil"}, "msetnx": {"plainnew", "2", rk, "evil"},
		"append": {rk, "evil"}, "setrange": {rk, "0", "evil"}, "incrbyfloat": {rk, "1.5"},
		"rename": {rk, "plain"}, "renamenx": {"plain", rk}, "copy": {rk, "plain", "REPLACE"}, "move": {rk, "1"}, "expiretime": {rk}, "pexpiretime": {rk}, "type": {rk}, "object": {"ENCODING", rk},
		"llen": {rk}, "lrange": {rk, "0", "-1"}, "lindex": {rk, "0"}, "lpush": {rk, "evil"}, "rpush": {rk, "evil"},
		"lpushx": {rk, "evil"}, "rpushx": {rk, "evil"}, "lpop": {rk}, "rpop": {rk, "2"}, "lrem": {rk, "0", "x"},
		"ltrim": {rk, "0", "1"}, "blpop": {"plain", rk, "1"}, "brpop": {rk, "plain", "0"},
		"lmove": {"plain", rk, "LEFT", "LEFT"}, "rpoplpush": {rk, "plain"}, "blmove": {rk, "plain", "LEFT", "RIGHT", "1"},
		"brpoplpush": {"plain", rk, "0"}, "lpos": {rk, "x"}, "lset": {rk, "0", "x"}, "linsert": {rk, "BEFORE", "a", "b"},
		"hset": {rk, "f", "v"}, "hmset": {rk, "f", "v"}, "hsetnx": {rk, "f", "v"}, "hget": {rk, "f"}, "hmget": {rk, "f"},
		"hgetall": {rk}, "hkeys": {rk}, "hvals": {rk}, "hdel": {rk, "f"}, "hlen": {rk}, "hexists": {rk, "f"},
		"hstrlen": {rk, "f"}, "hincrby": {rk, "f", "1"}, "hincrbyfloat": {rk, "f", "1"}, "hrandfield": {rk},
		"hscan": {rk, "0"}, "sadd": {rk, "m"}, "srem": {rk, "m"}, "sismember": {rk, "m"}, "smismember": {rk, "m"},
		"smembers": {rk}, "scard": {rk}, "spop": {rk}, "srandmember": {rk, "2"}, "sscan": {rk, "0"},
		"smove": {"plain", rk, "m"}, "sinter": {"plain", rk}, "sunion": {rk, "plain"}, "sdiff": {"plain", rk},
		"sinterstore": {"plain", "plain", rk}, "sunionstore": {rk, "plain"}, "sdiffstore": {"plain", rk},
		"sintercard": {"2", "plain", rk},
		"zadd":       {rk, "1", "m"}, "zincrby": {rk, "1", "m"}, "zrem": {rk, "m"}, "zscore": {rk, "m"}, "zmscore": {rk, "m"},
		"zcard": {rk}, "zcount": {rk, "0", "1"}, "zlexcount": {rk, "-", "+"}, "zrange": {rk, "0", "-1"}, "zrevrange": {rk, "0", "-1"},
		"zrangebyscore": {rk, "0", "1"}, "zrevrangebyscore": {rk, "1", "0"}, "zrangebylex": {rk, "-", "+"},
		"zrevrangebylex": {rk, "+", "-"}, "zrank": {rk, "m"}, "zrevrank": {rk, "m"}, "zpopmin": {rk}, "zpopmax": {rk},
		"zremrangebyrank": {rk, "0", "1"}, "zremrangebyscore": {rk, "0", "1"}, "zremrangebylex": {rk, "-", "+"},
		"zrandmember": {rk}, "zscan": {rk, "0"}, "zrangestore": {"plain", rk, "0", "-1"}, "zunionstore": {"plain", "2", "plain", rk},
		"zinterstore": {rk, "1", "plain"},
		"bzpopmin":    {"plain", rk, "1"}, "bzpopmax": {rk, "1"}, "zdiffstore": {rk, "1", "plain"},
		"zunion": {"2", "plain", rk}, "zinter": {"2", rk, "plain"}, "zdiff": {"2", "plain", rk},
		"zintercard": {"2", "plain", rk}, "zmpop": {"2", "plain", rk, "MIN"}, "bzmpop": {"1", "2", "plain", rk, "MAX"},
		"xadd": {rk, "1-1", "f", "v"}, "xtrim": {rk, "MAXLEN", "1"}, "xdel": {rk, "1-1"}, "xsetid": {rk, "1-1"}, "xlen": {rk},
		"xrange": {rk, "-", "+"}, "xrevrange": {rk, "+", "-"}, "xinfo": {"STREAM", rk},
		"xack": {rk, "g", "1-1"}, "xpending": {rk, "g"}, "xclaim": {rk, "g", "c", "0", "1-1"}, "xautoclaim": {rk, "g", "c", "0", "0"},
		"xgroup": {"CREATE", rk, "g", "$", "MKSTREAM"},
	}
	for name, cmd := range commands {
		if _, ok := calls[name]; cmd.firstKey > 0 && !ok {
			t.Fatalf("%s names a key and has no row here", name)
		}
	}
	extra := [][]string{{"SET", rk, "evil", "NX", "GET"}, {"SET", rk, "evil", "IFEQ", "127.0.0.1:9001"}, {"DELEX", rk}, {"SET", rk, "evil", "XX", "KEEPTTL"}, {"SET", "\x00", "evil"},
		{"SET", "\x00other", "v", "EX", "100"}, {"DEL", "\x00node/n2"},
		{"GETEX", rk}, {"GETEX", rk, "EX", "0"}, {"GETEX", rk, "EX", "x"}, {"GETEX", rk, "EXAT", "1"},
		{"SETRANGE", rk, "0", ""}, {"APPEND", rk, ""},
		{"RENAME", "plain", rk}, {"RENAMENX", rk, "plain"}, {"COPY", "plain", rk}, {"COPY", "plain", rk, "REPLACE"}, {"RENAME", "plain", "\x00"},
		{"LMPOP", "2", "plain", rk, "LEFT"}, {"BLMPOP", "1", "2", rk, "plain", "LEFT"}, {"LMOVE", rk, rk, "LEFT", "RIGHT"}, {"LSET", rk, "x", "y"},
		{"XREAD", "STREAMS", "plain", rk, "0", "0"}, {"XREAD", "BLOCK", "10", "STREAMS", rk, "$"}, {"XDEL", rk, "bad"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "plain", rk, ">", ">"}, {"XGROUP", "SETID", rk, "g", "$"}}
	rows := extra
	for name, args := range calls {
		rows = append(rows, append([]string{strings.ToUpper(name)}, args...))
	}
	c := dialRaw(t, srv.Addr())
	c.send("AUTH app-secret\r\n")
	c.expect("AUTH", []string{"+OK\r\n"})
	for _, row := range rows {
		c.send("SET plain 1\r\n" + array(row...) + "GET plain\r\n")
		c.expect(fmt.Sprintf("%q", row), []string{"+OK\r\n", refused, "$1\r\n1\r\n"})
		if addr, ok := store.NodeAPI("n1"); !ok || addr != "127.0.0.1:9001" {
			t.Fatalf("after %q the reserved record is %q, %v", row, addr, ok)
		}
	}
	// A NUL byte inside a key is an ordinary key, as in Redis.
	c.send(array("SET", "k\x00", "v") + array("GET", "k\x00"))
	c.expect("a NUL inside a key", []string{"+OK\r\n", "$1\r\nv\r\n"})
	// The keyspace's listings never show a reserved key.
	c.send("DEL plainnew\r\nKEYS *\r\nDBSIZE\r\n" + array("KEYS", "\x00*") + array("KEYS", "[\x00]node*"))
	c.expect("KEYS and DBSIZE", []string{":0\r\n", "*2\r\n$2\r\nk\x00\r\n$5\r\nplain\r\n", ":2\r\n", "*0\r\n", "*0\r\n"})
}

// array is a request as a RESP array of bulk strings.
func array(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}
