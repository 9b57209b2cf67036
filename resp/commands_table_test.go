package resp

import (
	"maps"
	"slices"
	"testing"

	"github.com/idemgate/idemgate/command"
)

// TestScriptAllowList: the commands a script may call, now derived from
// the store operations' rows (command.Op) and the connection's own
// declarations, are exactly the ones idemgate allowed before they were
// derived; and a command of an operation reads or writes, and needs the
// grant, its operation's row says.
func TestScriptAllowList(t *testing.T) {
	before := []string{"get", "mget", "getrange", "strlen", "exists", "ttl", "pttl",
		"set", "setnx", "getdel", "del", "unlink", "incr", "decr",
		"incrby", "decrby", "expire", "pexpire", "expireat", "pexpireat",
		"persist", "time", "ping", "echo", "delex", "digest",
		"getset", "setex", "psetex", "mset", "append", "setrange", "incrbyfloat",
		"type", "expiretime", "pexpiretime", "object",
		"llen", "lrange", "lindex", "lpush", "rpush", "lpushx", "rpushx",
		"lpop", "rpop", "lrem", "ltrim", "keys",
		"lpos", "lset", "linsert", "lmove", "rpoplpush", "lmpop", "blmpop",
		// hashes and sets (issue 37), each a command of the KV keyspace
		"hset", "hmset", "hsetnx", "hget", "hmget", "hgetall", "hkeys", "hvals", "hdel", "hlen", "hexists",
		"hstrlen", "hincrby", "hincrbyfloat", "hrandfield", "hscan", "sadd", "srem", "sismember", "smismember",
		"smembers", "scard", "spop", "srandmember", "smove", "sinter", "sunion", "sdiff", "sinterstore",
		"sunionstore", "sdiffstore", "sintercard", "sscan",
		// sorted sets
		"zadd", "zcard", "zcount", "zincrby", "zinterstore", "zlexcount", "zmscore", "zpopmax", "zpopmin",
		"zrandmember", "zrange", "zrangebylex", "zrangebyscore", "zrangestore", "zrank", "zrem",
		"zremrangebylex", "zremrangebyrank", "zremrangebyscore", "zrevrange", "zrevrangebylex",
		"zrevrangebyscore", "zrevrank", "zscan", "zscore", "zunionstore",
		// streams
		"xack", "xadd", "xautoclaim", "xclaim", "xdel", "xgroup", "xinfo", "xlen", "xpending", "xrange", "xread", "xreadgroup",
		"xrevrange", "xsetid", "xtrim",
		// the pops of several keys and the algebra as reads; BZPOPMIN and
		// BZPOPMAX are NOSCRIPT, as in Redis 7.0
		"zmpop", "bzmpop", "zunion", "zinter", "zdiff", "zintercard", "zdiffstore",
		// CLUSTER, which answers as Redis without cluster mode (not RESET)
		"cluster"}
	var got []string
	for name, c := range commands {
		if c.script {
			got = append(got, name)
		}
	}
	slices.Sort(got)
	slices.Sort(before)
	if !slices.Equal(got, before) {
		t.Errorf("scripts may call\n%v, want\n%v", got, before)
	}
	for _, name := range slices.Sorted(maps.Keys(commands)) {
		c := commands[name]
		if c.op == command.TypeUnknown {
			continue
		}
		op := c.op.Op()
		if (c.kind == kindWrite) != op.Write || c.kind == kindConn || c.write != (op.Role >= command.RoleWrite) ||
			c.admin != (name == "flushdb" || name == "flushall") || (c.script && !op.Script) {
			t.Errorf("%s: kind %d, write %v, admin %v, script %v; its operation %s: %+v", name, c.kind, c.write, c.admin, c.script, c.op, op)
		}
		if c.kind == kindWrite && !c.write {
			t.Errorf("%s writes without the write grant", name)
		}
	}
}
