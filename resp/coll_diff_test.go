package resp

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// hashStreams and setStreams are command streams of the hash and set
// commands whose replies must be Redis 7.0's ("{k}" is the stream's own
// key prefix): every command, wrong kinds both ways, arguments' edges and
// errors, the keyspace's commands on a hash and a set, MULTI and scripts.
// A reply whose order Redis leaves to its encoding (HGETALL, SMEMBERS, the
// set algebra, HSCAN, ...) is compared as a set of elements, or of
// field-value pairs: Redis answers a small hash in insertion order and a
// large one in its table's, idemgate in its elements' (command.ElemOrder).
var hashStreams = [][][]string{
	// HSET, HGET, HMSET, HMGET, HLEN, HEXISTS, HSTRLEN, HSETNX
	{{"HSET", "{k}h", "a", "1", "b", "2"}, {"HSET", "{k}h", "a", "x", "c", "3"}, {"HGET", "{k}h", "a"}, {"HGET", "{k}h", "zz"},
		{"HGET", "{k}none", "a"}, {"HLEN", "{k}h"}, {"HLEN", "{k}none"}, {"HEXISTS", "{k}h", "b"}, {"HEXISTS", "{k}h", "q"},
		{"HEXISTS", "{k}none", "q"}, {"HSTRLEN", "{k}h", "a"}, {"HSTRLEN", "{k}h", "q"}, {"HSTRLEN", "{k}none", "q"},
		{"HMSET", "{k}h", "d", "4", "e", ""}, {"HMGET", "{k}h", "a", "q", "e", "d"}, {"HMGET", "{k}none", "a", "b"},
		{"HSETNX", "{k}h", "a", "no"}, {"HSETNX", "{k}h", "f", "yes"}, {"HSETNX", "{k}n2", "f", "yes"}, {"HGET", "{k}h", "f"},
		{"HSET", "{k}h", "a"}, {"HSET", "{k}h", "a", "1", "b"}, {"HSET", "{k}h"}, {"HMSET", "{k}h", "a"}, {"HMSET", "{k}h", "a", "1", "b"},
		{"HSETNX", "{k}h", "a"}, {"HGET", "{k}h"}, {"HMGET", "{k}h"}, {"HLEN"}, {"HSET", "{k}h", "", ""}, {"HGET", "{k}h", ""},
		{"HSET", "{k}b", "\x00\xff\r\n", "\r\n\x00"}, {"HGET", "{k}b", "\x00\xff\r\n"}, {"HGETALL", "{k}h"}, {"HKEYS", "{k}h"},
		{"HVALS", "{k}h"}, {"HGETALL", "{k}none"}, {"HKEYS", "{k}none"}, {"HVALS", "{k}none"}, {"HLEN", "{k}h"}},
	// HDEL; an emptied hash is gone
	{{"HSET", "{k}h", "a", "1", "b", "2", "c", "3"}, {"HDEL", "{k}h", "a", "a", "zz"}, {"HDEL", "{k}h", "q"}, {"HDEL", "{k}none", "a"},
		{"HLEN", "{k}h"}, {"HDEL", "{k}h", "b", "c"}, {"EXISTS", "{k}h"}, {"TYPE", "{k}h"}, {"HDEL", "{k}h"}},
	// HINCRBY, HINCRBYFLOAT and their errors
	{{"HINCRBY", "{k}h", "n", "5"}, {"HINCRBY", "{k}h", "n", "-7"}, {"HGET", "{k}h", "n"}, {"HINCRBY", "{k}h", "n", "x"},
		{"HINCRBY", "{k}h", "n", "1.5"}, {"HINCRBY", "{k}h", "n", ""}, {"HINCRBY", "{k}h", "n", "9223372036854775807"},
		{"HSET", "{k}h", "m", "9223372036854775800"}, {"HINCRBY", "{k}h", "m", "8"}, {"HINCRBY", "{k}h", "m", "7"},
		{"HSET", "{k}h", "w", "word"}, {"HINCRBY", "{k}h", "w", "1"}, {"HSET", "{k}h", "sp", " 1"}, {"HINCRBY", "{k}h", "sp", "1"},
		{"HINCRBYFLOAT", "{k}h", "f", "1.5"}, {"HINCRBYFLOAT", "{k}h", "f", "0.1"}, {"HINCRBYFLOAT", "{k}h", "f", "-1.6"},
		{"HINCRBYFLOAT", "{k}h", "f", "x"}, {"HINCRBYFLOAT", "{k}h", "f", "inf"}, {"HINCRBYFLOAT", "{k}h", "f", "nan"},
		{"HINCRBYFLOAT", "{k}h", "w", "1"}, {"HINCRBYFLOAT", "{k}h", "n", "1e3"}, {"HINCRBYFLOAT", "{k}h", "big", "1.7976931348623157e308"},
		{"HINCRBYFLOAT", "{k}h", "big", "1.7976931348623157e308"}, {"HINCRBYFLOAT", "{k}h", "g", "3.0"}, {"HGET", "{k}h", "g"},
		{"HINCRBY", "{k}h", "g", "1"}, {"HINCRBYFLOAT", "{k}h", "m", "1"}, {"HINCRBY", "{k}new", "x", "-3"}, {"HGETALL", "{k}new"},
		{"HINCRBY", "{k}h", "n"}, {"HINCRBYFLOAT", "{k}h"}},
	// HRANDFIELD's arguments and the answers that are not random
	{{"HRANDFIELD", "{k}none"}, {"HRANDFIELD", "{k}none", "3"}, {"HRANDFIELD", "{k}none", "-3", "WITHVALUES"}, {"HSET", "{k}h", "a", "1"},
		{"HRANDFIELD", "{k}h"}, {"HRANDFIELD", "{k}h", "0"}, {"HRANDFIELD", "{k}h", "5"}, {"HRANDFIELD", "{k}h", "-3"},
		{"HRANDFIELD", "{k}h", "2", "WITHVALUES"}, {"HRANDFIELD", "{k}h", "-2", "withvalues"}, {"HRANDFIELD", "{k}h", "1", "WITHVALUE"},
		{"HRANDFIELD", "{k}h", "1", "WITHVALUES", "x"}, {"HRANDFIELD", "{k}h", "x"}, {"HRANDFIELD", "{k}h", "-9223372036854775808"},
		{"HRANDFIELD", "{k}h", "9223372036854775807", "WITHVALUES"}, {"HRANDFIELD", "{k}h", "-4611686018427387904", "WITHVALUES"},
		{"HSET", "{k}h", "b", "2", "c", "3"}, {"HRANDFIELD", "{k}h", "3"}, {"HRANDFIELD", "{k}h", "10", "WITHVALUES"}, {"HRANDFIELD"}},
	// HSCAN of a small hash: whole, cursor 0; its arguments
	{{"HSET", "{k}h", "a", "1", "b", "2", "ab", "3"}, {"HSCAN", "{k}h", "0"}, {"HSCAN", "{k}h", "0", "MATCH", "a*"},
		{"HSCAN", "{k}h", "0", "COUNT", "1"}, {"HSCAN", "{k}h", "0", "COUNT", "0"}, {"HSCAN", "{k}h", "0", "COUNT", "x"},
		{"HSCAN", "{k}h", "0", "TYPE", "string"}, {"HSCAN", "{k}h", "0", "MATCH"}, {"HSCAN", "{k}h", "x"}, {"HSCAN", "{k}h", "-1"},
		{"HSCAN", "{k}none", "0"}, {"HSCAN", "{k}none", "0", "COUNT", "x"}, {"HSCAN", "{k}none", "x"}, {"HSCAN", "{k}h"}},
	// wrong kinds, both ways
	{{"SET", "{k}s", "v"}, {"HSET", "{k}h", "a", "1"}, {"RPUSH", "{k}l", "x"}, {"HSET", "{k}s", "a", "1"}, {"HGET", "{k}s", "a"},
		{"HMGET", "{k}s", "a"}, {"HGETALL", "{k}l"}, {"HDEL", "{k}s", "a"}, {"HLEN", "{k}l"}, {"HINCRBY", "{k}s", "a", "1"},
		{"HINCRBYFLOAT", "{k}l", "a", "1"}, {"HSETNX", "{k}s", "a", "1"}, {"HEXISTS", "{k}s", "a"}, {"HSTRLEN", "{k}s", "a"},
		{"HKEYS", "{k}s"}, {"HVALS", "{k}s"}, {"HRANDFIELD", "{k}s"}, {"HRANDFIELD", "{k}s", "1"}, {"HSCAN", "{k}s", "0"},
		{"HSCAN", "{k}s", "x"}, {"GET", "{k}h"}, {"MGET", "{k}h", "{k}s"}, {"INCR", "{k}h"}, {"APPEND", "{k}h", "x"}, {"LPUSH", "{k}h", "x"},
		{"LLEN", "{k}h"}, {"STRLEN", "{k}h"}, {"GETDEL", "{k}h"}, {"SET", "{k}h", "x", "GET"}, {"TYPE", "{k}h"},
		{"OBJECT", "ENCODING", "{k}h"}, {"SET", "{k}h", "now a string"}, {"TYPE", "{k}h"}, {"GET", "{k}h"}},
	// OBJECT ENCODING: listpack until Redis converts, then hashtable for good
	{{"HSET", "{k}h", "a", "1"}, {"OBJECT", "ENCODING", "{k}h"}, {"HSET", "{k}h", "long", strings.Repeat("v", 65)},
		{"OBJECT", "ENCODING", "{k}h"}, {"HDEL", "{k}h", "long"}, {"OBJECT", "ENCODING", "{k}h"},
		{"HSET", "{k}k", strings.Repeat("f", 65), "1"}, {"OBJECT", "ENCODING", "{k}k"}, {"HSET", "{k}j", "f", strings.Repeat("v", 64)},
		{"OBJECT", "ENCODING", "{k}j"}},
	// the keyspace's commands on a hash
	{{"HSET", "{k}h", "a", "1", "b", "2"}, {"EXPIRE", "{k}h", "100"}, {"TTL", "{k}h"}, {"HSET", "{k}h", "c", "3"}, {"TTL", "{k}h"},
		{"HDEL", "{k}h", "c"}, {"TTL", "{k}h"}, {"PERSIST", "{k}h"}, {"TTL", "{k}h"}, {"RENAME", "{k}h", "{k}g"}, {"HGET", "{k}g", "a"},
		{"EXISTS", "{k}h"}, {"COPY", "{k}g", "{k}c"}, {"HSET", "{k}c", "a", "changed"}, {"HGET", "{k}g", "a"}, {"HGET", "{k}c", "a"},
		{"RENAMENX", "{k}c", "{k}g"}, {"COPY", "{k}c", "{k}g", "REPLACE"}, {"HGET", "{k}g", "a"}, {"HLEN", "{k}g"}, {"DEL", "{k}g", "{k}c"},
		{"EXISTS", "{k}g", "{k}c"}, {"HSET", "{k}x", "a", "1"}, {"PEXPIREAT", "{k}x", "1"}, {"EXISTS", "{k}x"}, {"HLEN", "{k}x"},
		{"HGET", "{k}x", "a"}, {"KEYS", "{k}*"}, {"HSET", "{k}s", "a", "1"}, {"SET", "{k}s", "v"}, {"GET", "{k}s"}, {"UNLINK", "{k}s"}},
	// hashes in MULTI, WATCH on a hash
	{{"HSET", "{k}h", "a", "1"}, {"MULTI"}, {"HSET", "{k}h", "b", "2"}, {"HGET", "{k}h", "b"}, {"HLEN", "{k}h"}, {"HINCRBY", "{k}h", "a", "5"},
		{"HINCRBY", "{k}h", "b", "x"}, {"HMGET", "{k}h", "a", "b", "c"}, {"HDEL", "{k}h", "a"}, {"HGETALL", "{k}h"}, {"HGET", "{k}h"},
		{"EXEC"}, {"WATCH", "{k}h"}, {"HSET", "{k}h", "c", "3"}, {"MULTI"}, {"HGET", "{k}h", "c"}, {"EXEC"}, {"WATCH", "{k}h"},
		{"HGET", "{k}h", "c"}, {"MULTI"}, {"HEXISTS", "{k}h", "c"}, {"EXEC"}, {"SET", "{k}s", "v"}, {"MULTI"}, {"HSET", "{k}s", "a", "1"},
		{"HGET", "{k}s", "a"}, {"SET", "{k}t", "w"}, {"EXEC"}},
	// hashes in scripts
	{{"EVAL", "redis.call('hset', KEYS[1], 'a', 1, 'b', 2); return redis.call('hget', KEYS[1], 'a')", "1", "{k}h"},
		{"EVAL", "return redis.call('hmget', KEYS[1], 'a', 'z', 'b')", "1", "{k}h"},
		{"EVAL", "return redis.call('hincrby', KEYS[1], 'a', 10)", "1", "{k}h"},
		{"EVAL", "return redis.call('hincrbyfloat', KEYS[1], 'a', '0.5')", "1", "{k}h"},
		{"EVAL", "local t = redis.call('hgetall', KEYS[1]); return #t", "1", "{k}h"},
		{"EVAL", "return {redis.call('hlen', KEYS[1]), redis.call('hexists', KEYS[1], 'b'), redis.call('hdel', KEYS[1], 'b', 'q')}", "1", "{k}h"},
		{"EVAL", "redis.call('del', KEYS[1]); redis.call('hset', KEYS[1], 'x', 'y'); return redis.call('hgetall', KEYS[1])", "1", "{k}h"},
		{"EVAL", "return redis.pcall('hincrby', KEYS[1], 'x', 1)", "1", "{k}h"}, {"SET", "{k}s", "v"},
		{"EVAL", "return redis.pcall('hset', KEYS[1], 'a', 1)", "1", "{k}s"},
		{"EVAL", "redis.call('hset', KEYS[1], 'a', 1); redis.call('expire', KEYS[1], 100); return redis.call('type', KEYS[1])", "1", "{k}e"},
		{"TTL", "{k}e"}, {"HGETALL", "{k}h"}, {"EVAL", "return redis.call('hrandfield', KEYS[1], 1, 'withvalues')", "1", "{k}h"},
		{"EVAL", "return redis.call('hscan', KEYS[1], 0)", "1", "{k}h"}},
}

var setStreams = [][][]string{
	// SADD, SREM, SISMEMBER, SMISMEMBER, SCARD, SMEMBERS
	{{"SADD", "{k}s", "a", "b", "a"}, {"SADD", "{k}s", "b", "c"}, {"SCARD", "{k}s"}, {"SCARD", "{k}none"}, {"SISMEMBER", "{k}s", "a"},
		{"SISMEMBER", "{k}s", "z"}, {"SISMEMBER", "{k}none", "a"}, {"SMISMEMBER", "{k}s", "a", "z", "c"}, {"SMISMEMBER", "{k}none", "a"},
		{"SMEMBERS", "{k}s"}, {"SMEMBERS", "{k}none"}, {"SREM", "{k}s", "a", "a", "z"}, {"SREM", "{k}none", "a"}, {"SREM", "{k}s", "b", "c"},
		{"EXISTS", "{k}s"}, {"SADD", "{k}s"}, {"SREM", "{k}s"}, {"SISMEMBER", "{k}s"}, {"SMISMEMBER", "{k}s"}, {"SCARD"},
		{"SADD", "{k}b", "", "\x00\xff\r\n"}, {"SMEMBERS", "{k}b"}, {"SISMEMBER", "{k}b", ""}},
	// SPOP and SRANDMEMBER: arguments, and the answers that are not random
	{{"SPOP", "{k}none"}, {"SPOP", "{k}none", "2"}, {"SRANDMEMBER", "{k}none"}, {"SRANDMEMBER", "{k}none", "2"},
		{"SRANDMEMBER", "{k}none", "-2"}, {"SADD", "{k}s", "a"}, {"SRANDMEMBER", "{k}s"}, {"SRANDMEMBER", "{k}s", "3"},
		{"SRANDMEMBER", "{k}s", "-3"}, {"SRANDMEMBER", "{k}s", "0"}, {"SRANDMEMBER", "{k}s", "x"}, {"SRANDMEMBER", "{k}s", "1", "2"},
		{"SRANDMEMBER", "{k}s", "-9223372036854775808"}, {"SPOP", "{k}s", "0"}, {"SPOP", "{k}s", "-1"}, {"SPOP", "{k}s", "x"},
		{"SPOP", "{k}s", "1", "2"}, {"SPOP", "{k}s"}, {"EXISTS", "{k}s"}, {"SADD", "{k}s", "a", "b", "c"}, {"SPOP", "{k}s", "5"},
		{"EXISTS", "{k}s"}, {"SADD", "{k}s", "a", "b"}, {"SRANDMEMBER", "{k}s", "2"}, {"SPOP", "{k}s", "2"}, {"SPOP"},
		{"SADD", "{k}s", "a"}, {"SPOP", "{k}s", "-0"}, {"SPOP", "{k}s", "1.5"}, {"SPOP", "{k}s", "9223372036854775808"},
		{"SPOP", "{k}s", ""}, {"SPOP", "{k}s", " 1"}, {"SPOP", "{k}s", "+1"}, {"SPOP", "{k}s", "01"}, {"SPOP", "{k}none", "-1"},
		{"SPOP", "{k}none", "x"}, {"SPOP", "{k}none", "1", "2"}, {"SPOP", "{k}s", "x", "y"}, {"SET", "{k}str", "v"},
		{"SPOP", "{k}str", "x"}, {"SPOP", "{k}str", "-1"}, {"SPOP", "{k}str", "1"}, {"SMEMBERS", "{k}s"}},
	// SMOVE
	{{"SADD", "{k}a", "x", "y"}, {"SADD", "{k}b", "y"}, {"SMOVE", "{k}a", "{k}b", "x"}, {"SMOVE", "{k}a", "{k}b", "y"},
		{"SMEMBERS", "{k}b"}, {"EXISTS", "{k}a"}, {"SMOVE", "{k}a", "{k}b", "y"}, {"SMOVE", "{k}b", "{k}b", "x"}, {"SMOVE", "{k}b", "{k}b", "q"},
		{"SMOVE", "{k}b", "{k}new", "x"}, {"SMEMBERS", "{k}new"}, {"SET", "{k}str", "v"}, {"SMOVE", "{k}b", "{k}str", "y"},
		{"SMOVE", "{k}str", "{k}b", "y"}, {"SMOVE", "{k}none", "{k}str", "y"}, {"SMOVE", "{k}b", "{k}str", "zz"}, {"SMEMBERS", "{k}b"},
		{"SMOVE", "{k}b", "{k}c"}},
	// SINTER, SUNION, SDIFF, their STOREs, SINTERCARD
	{{"SADD", "{k}a", "1", "2", "3", "4"}, {"SADD", "{k}b", "3", "4", "5"}, {"SADD", "{k}c", "4", "5", "6"}, {"SINTER", "{k}a", "{k}b"},
		{"SINTER", "{k}a", "{k}b", "{k}c"}, {"SINTER", "{k}a", "{k}none"}, {"SINTER", "{k}none"}, {"SUNION", "{k}a", "{k}b", "{k}none"},
		{"SUNION", "{k}none"}, {"SDIFF", "{k}a", "{k}b"}, {"SDIFF", "{k}a", "{k}b", "{k}c"}, {"SDIFF", "{k}none", "{k}a"},
		{"SDIFF", "{k}a", "{k}none"}, {"SINTERSTORE", "{k}d", "{k}a", "{k}b"}, {"SMEMBERS", "{k}d"}, {"SUNIONSTORE", "{k}d", "{k}a", "{k}c"},
		{"SCARD", "{k}d"}, {"SDIFFSTORE", "{k}d", "{k}a", "{k}a"}, {"EXISTS", "{k}d"}, {"SET", "{k}d", "x"},
		{"SINTERSTORE", "{k}d", "{k}a", "{k}c"}, {"TYPE", "{k}d"}, {"SUNIONSTORE", "{k}a", "{k}a", "{k}b"}, {"SCARD", "{k}a"},
		{"SINTERSTORE", "{k}d", "{k}none", "{k}a"}, {"EXISTS", "{k}d"}, {"SINTERCARD", "2", "{k}a", "{k}b"},
		{"SINTERCARD", "2", "{k}a", "{k}b", "LIMIT", "1"}, {"SINTERCARD", "2", "{k}a", "{k}b", "LIMIT", "0"},
		{"SINTERCARD", "1", "{k}none"}, {"SINTERCARD", "0", "{k}a"}, {"SINTERCARD", "x", "{k}a"}, {"SINTERCARD", "3", "{k}a", "{k}b"},
		{"SINTERCARD", "1", "{k}a", "LIMIT"}, {"SINTERCARD", "1", "{k}a", "LIMIT", "-1"}, {"SINTERCARD", "1", "{k}a", "LIMIT", "x"},
		{"SINTERCARD", "1", "{k}a", "FOO", "1"}, {"SINTER"}, {"SINTERSTORE", "{k}d"}, {"SINTERCARD", "1"}},
	// wrong kinds
	{{"SET", "{k}s", "v"}, {"SADD", "{k}set", "a"}, {"HSET", "{k}h", "a", "1"}, {"SADD", "{k}s", "a"}, {"SREM", "{k}h", "a"},
		{"SISMEMBER", "{k}s", "a"}, {"SMISMEMBER", "{k}h", "a"}, {"SCARD", "{k}h"}, {"SMEMBERS", "{k}s"}, {"SPOP", "{k}s"},
		{"SRANDMEMBER", "{k}h", "2"}, {"SINTER", "{k}set", "{k}s"}, {"SINTER", "{k}none", "{k}s"}, {"SUNION", "{k}set", "{k}h"},
		{"SDIFF", "{k}none", "{k}h"}, {"SINTERSTORE", "{k}d", "{k}set", "{k}s"}, {"SINTERCARD", "2", "{k}set", "{k}h"},
		{"SSCAN", "{k}s", "0"}, {"HGET", "{k}set", "a"}, {"GET", "{k}set"}, {"LLEN", "{k}set"}, {"TYPE", "{k}set"},
		{"SET", "{k}set", "x"}, {"TYPE", "{k}set"}},
	// OBJECT ENCODING and SSCAN of a small set
	{{"SADD", "{k}i", "1", "2", "-3"}, {"OBJECT", "ENCODING", "{k}i"}, {"SADD", "{k}i", "x"}, {"OBJECT", "ENCODING", "{k}i"},
		{"SREM", "{k}i", "x"}, {"OBJECT", "ENCODING", "{k}i"}, {"SADD", "{k}w", "a"}, {"OBJECT", "ENCODING", "{k}w"},
		{"SADD", "{k}z", "01"}, {"OBJECT", "ENCODING", "{k}z"}, {"SSCAN", "{k}i", "0"}, {"SSCAN", "{k}i", "0", "MATCH", "-*"},
		{"SSCAN", "{k}none", "0"}, {"SSCAN", "{k}i", "x"}, {"SSCAN", "{k}i", "0", "COUNT", "0"}},
	// the keyspace, MULTI, scripts
	{{"SADD", "{k}s", "a", "b"}, {"EXPIRE", "{k}s", "100"}, {"SADD", "{k}s", "c"}, {"TTL", "{k}s"}, {"RENAME", "{k}s", "{k}t"},
		{"SCARD", "{k}t"}, {"COPY", "{k}t", "{k}u"}, {"SREM", "{k}u", "a"}, {"SCARD", "{k}t"}, {"SCARD", "{k}u"}, {"TTL", "{k}u"},
		{"MULTI"}, {"SADD", "{k}t", "d"}, {"SCARD", "{k}t"}, {"SISMEMBER", "{k}t", "d"}, {"SPOP", "{k}u", "10"}, {"SMOVE", "{k}t", "{k}v", "a"},
		{"SINTERCARD", "1", "{k}t"}, {"EXEC"},
		{"EVAL", "redis.call('sadd', KEYS[1], 'x', 'y'); return {redis.call('scard', KEYS[1]), redis.call('sismember', KEYS[1], 'x')}", "1", "{k}e"},
		{"EVAL", "return redis.call('smove', KEYS[1], KEYS[2], 'x')", "2", "{k}e", "{k}f"},
		{"EVAL", "return redis.call('sinterstore', KEYS[1], KEYS[2], KEYS[3])", "3", "{k}g", "{k}e", "{k}f"},
		{"EVAL", "return redis.call('spop', KEYS[1], 5)", "1", "{k}f"}, {"EXISTS", "{k}f"},
		{"EVAL", "return redis.pcall('sadd', KEYS[1], 'a')", "1", "{k}nope"}, {"SET", "{k}str", "v"},
		{"EVAL", "return redis.pcall('sadd', KEYS[1], 'a')", "1", "{k}str"}},
	// another keyspace: keys in values (SMOVE's, the algebra's) are of it
	{{"SELECT", "3"}, {"SADD", "{k}a", "x", "y"}, {"SADD", "{k}b", "y"}, {"SMOVE", "{k}a", "{k}b", "x"}, {"SINTER", "{k}a", "{k}b"},
		{"SUNIONSTORE", "{k}c", "{k}a", "{k}b"}, {"SMEMBERS", "{k}c"}, {"SINTERCARD", "2", "{k}c", "{k}b"}, {"HSET", "{k}h", "f", "v"},
		{"SELECT", "0"}, {"EXISTS", "{k}a", "{k}b", "{k}c", "{k}h"}, {"SMEMBERS", "{k}c"}, {"SELECT", "3"},
		{"EXISTS", "{k}a", "{k}b", "{k}c", "{k}h"}, {"MULTI"}, {"SMOVE", "{k}b", "{k}d", "y"}, {"SDIFF", "{k}d", "{k}a"}, {"EXEC"},
		{"EVAL", "return redis.call('smove', KEYS[1], KEYS[2], 'x')", "2", "{k}b", "{k}e"}, {"SMEMBERS", "{k}e"},
		{"FLUSHDB"}, {"EXISTS", "{k}a", "{k}b", "{k}c", "{k}h", "{k}e"}},
}

// TestHashesAgainstRedis and TestSetsAgainstRedis: the streams, in RESP2
// and RESP3, answered as redis-server answers them, through a follower.
func TestHashesAgainstRedis(t *testing.T) { collAgainstRedis(t, "hash", hashStreams) }
func TestSetsAgainstRedis(t *testing.T)   { collAgainstRedis(t, "set", setStreams) }

func collAgainstRedis(t *testing.T, name string, streams [][][]string) {
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	follower := (tc.rc.WaitLeader(5*time.Second) + 1) % 3
	for _, proto := range []int{2, 3} {
		for i, stream := range streams {
			rc, ic := dialRaw(t, redisAddr), dialRaw(t, tc.addrs[follower])
			if proto == 3 {
				for _, c := range []*rawConn{rc, ic} {
					c.send("HELLO 3\r\n")
					c.replies(1)
				}
			}
			prefix := fmt.Sprintf("%s%d:%d:", name, proto, i)
			for _, cmd := range stream {
				args := make([]string, len(cmd))
				for j, a := range cmd {
					args[j] = strings.ReplaceAll(a, "{k}", prefix)
				}
				rc.send(array(args...))
				ic.send(array(args...))
				want, got := rc.replies(1)[0], ic.replies(1)[0]
				mode := unorderedMode(args)
				if mode != "" {
					want, got = canonReply(t, want, mode), canonReply(t, got, mode)
				}
				if got != want && !sameRemaining(args[0], got, want) {
					t.Errorf("resp%d stream %d: %q:\n idemgate %q\n redis    %q", proto, i, args, got, want)
				}
			}
		}
	}
}

// unorderedMode says how a command's reply is compared: "" exactly;
// "sorted" as a set of elements; "pairs" as a set of field-value pairs;
// "scan" and "scanpairs" as a scan's step, the elements so.
func unorderedMode(args []string) string {
	name := strings.ToLower(args[0])
	switch name {
	case "hkeys", "hvals", "smembers", "sinter", "sunion", "sdiff", "spop", "srandmember", "keys":
		return "sorted"
	case "hgetall":
		return "pairs"
	case "hrandfield":
		if len(args) == 4 {
			return "pairs"
		}
		return "sorted"
	case "hscan", "zscan":
		return "scanpairs"
	case "sscan":
		return "scan"
	case "exec":
		return "exec"
	case "eval":
		switch {
		case strings.Contains(args[1], "hgetall"), strings.Contains(args[1], "withvalues"):
			return "pairs"
		case strings.Contains(args[1], "hscan"):
			return "scanpairs"
		case strings.Contains(args[1], "spop"):
			return "sorted"
		}
	}
	return ""
}

// respNode is a parsed reply: its type byte, its line or bulk, its items.
type respNode struct {
	typ   byte
	s     string
	items []respNode
}

func parseResp(t *testing.T, r string) (respNode, string) {
	t.Helper()
	line, rest, ok := strings.Cut(r, "\r\n")
	if !ok || line == "" {
		t.Fatalf("a reply that does not parse: %q", r)
	}
	n := respNode{typ: line[0], s: line[1:]}
	switch n.typ {
	case '$', '=':
		l, _ := strconv.Atoi(n.s)
		if l < 0 {
			return n, rest
		}
		n.s, rest = rest[:l], rest[l+2:]
	case '*', '~', '%', '>':
		c, _ := strconv.Atoi(n.s)
		if n.typ == '%' {
			c *= 2
		}
		for range max(c, 0) {
			var it respNode
			it, rest = parseResp(t, rest)
			n.items = append(n.items, it)
		}
	}
	return n, rest
}

func (n respNode) String() string {
	if n.items == nil {
		return string(n.typ) + n.s
	}
	parts := make([]string, len(n.items))
	for i, it := range n.items {
		parts[i] = it.String()
	}
	return string(n.typ) + n.s + "[" + strings.Join(parts, ",") + "]"
}

// canonReply is a reply with its elements (or pairs) in sorted order.
func canonReply(t *testing.T, r, mode string) string {
	t.Helper()
	n, _ := parseResp(t, r)
	sortItems := func(n *respNode, pairs bool) {
		if pairs && len(n.items) > 0 && n.items[0].items == nil {
			var ps []respNode
			for i := 0; i+1 < len(n.items); i += 2 {
				ps = append(ps, respNode{typ: 'p', items: n.items[i : i+2]})
			}
			n.items = ps
		}
		sort.Slice(n.items, func(i, j int) bool { return n.items[i].String() < n.items[j].String() })
	}
	switch mode {
	case "sorted", "pairs":
		sortItems(&n, mode == "pairs")
	case "scan", "scanpairs":
		if len(n.items) == 2 {
			sortItems(&n.items[1], mode == "scanpairs")
		}
	case "exec": // each array among a transaction's replies, as a set
		for i := range n.items {
			if len(n.items[i].items) > 0 {
				sortItems(&n.items[i], false)
			}
		}
	}
	return n.String()
}

// TestCollScanType: SCAN's TYPE names a hash and a set as TYPE does.
func TestCollScanType(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", nil)
	c := dialRaw(t, srv.Addr())
	c.send(array("HSET", "st:h", "f", "v") + array("SADD", "st:s", "m") + array("SET", "st:x", "v") + array("RPUSH", "st:l", "e"))
	c.replies(4)
	for typ, want := range map[string]string{"hash": "st:h", "set": "st:s", "string": "st:x", "list": "st:l"} {
		c.send(array("SCAN", "0", "TYPE", typ, "COUNT", "100"))
		if got, w := c.replies(1)[0], fmt.Sprintf("*2\r\n$1\r\n0\r\n*1\r\n$%d\r\n%s\r\n", len(want), want); got != w {
			t.Errorf("SCAN TYPE %s: %q, want %q", typ, got, w)
		}
		c.send(array("TYPE", want))
		if got := c.replies(1)[0]; got != "+"+typ+"\r\n" {
			t.Errorf("TYPE %s: %q", want, got)
		}
	}
}
