package resp

import "testing"

// listStreams are command streams of the list commands whose replies must
// be Redis 7.0's, byte for byte ("{k}" is the stream's own key prefix):
// every command, wrong kinds both ways, counts' and indexes' edges, the
// keyspace commands on a list, lists in MULTI and in scripts, and BLPOP's
// arguments, key order and timeouts (short ones, on empty keys: both
// servers wait them out and answer the null array).
var listStreams = [][][]string{
	// LPUSH, RPUSH, LLEN, LRANGE, LINDEX
	{{"LPUSH", "{k}l", "a", "b", "c"}, {"RPUSH", "{k}l", "d", "e"}, {"LLEN", "{k}l"}, {"LRANGE", "{k}l", "0", "-1"},
		{"LRANGE", "{k}l", "1", "2"}, {"LRANGE", "{k}l", "-2", "-1"}, {"LRANGE", "{k}l", "-100", "100"}, {"LRANGE", "{k}l", "3", "1"},
		{"LRANGE", "{k}l", "5", "10"}, {"LRANGE", "{k}l", "-1", "-2"}, {"LRANGE", "{k}l", "0", "-6"}, {"LRANGE", "{k}l", "0", "-5"},
		{"LRANGE", "{k}l", "x", "1"}, {"LRANGE", "{k}l", "0", "1.5"}, {"LRANGE", "{k}none", "0", "-1"}, {"LRANGE", "{k}none", "a", "b"},
		{"LRANGE", "{k}l", "-9223372036854775808", "9223372036854775807"}, {"LRANGE", "{k}l", "0"},
		{"LINDEX", "{k}l", "0"}, {"LINDEX", "{k}l", "-1"}, {"LINDEX", "{k}l", "4"}, {"LINDEX", "{k}l", "5"}, {"LINDEX", "{k}l", "-5"},
		{"LINDEX", "{k}l", "-6"}, {"LINDEX", "{k}l", "x"}, {"LINDEX", "{k}none", "x"}, {"LINDEX", "{k}none", "0"},
		{"LLEN", "{k}none"}, {"LPUSH", "{k}l"}, {"LLEN"}, {"RPUSH", "{k}b", "", "\x00\xff\r\n"}, {"LRANGE", "{k}b", "0", "-1"},
		{"LRANGE", "{k}l", "01", "1"}, {"LRANGE", "{k}l", "-0", "1"}, {"LINDEX", "{k}l", "00"}, {"LPOP", "{k}l", "01"}},
	// LPUSHX, RPUSHX
	{{"LPUSHX", "{k}l", "a"}, {"RPUSHX", "{k}l", "a", "b"}, {"EXISTS", "{k}l"}, {"RPUSH", "{k}l", "x"}, {"LPUSHX", "{k}l", "a", "b"},
		{"RPUSHX", "{k}l", "c"}, {"LRANGE", "{k}l", "0", "-1"}, {"SET", "{k}s", "v"}, {"LPUSHX", "{k}s", "a"}, {"RPUSHX", "{k}s", "a"}},
	// LPOP, RPOP and their counts
	{{"RPUSH", "{k}l", "a", "b", "c", "d", "e"}, {"LPOP", "{k}l"}, {"RPOP", "{k}l"}, {"LPOP", "{k}l", "2"}, {"LPOP", "{k}l", "0"},
		{"RPOP", "{k}l", "5"}, {"EXISTS", "{k}l"}, {"LPOP", "{k}l"}, {"LPOP", "{k}l", "2"}, {"LPOP", "{k}l", "0"}, {"RPOP", "{k}l", "1"},
		{"RPUSH", "{k}l", "a", "b"}, {"LPOP", "{k}l", "-1"}, {"LPOP", "{k}l", "x"}, {"LPOP", "{k}l", "1", "2"}, {"LPOP", "{k}none", "x"},
		{"RPOP", "{k}l", "9223372036854775807"}, {"EXISTS", "{k}l"}, {"LPOP"}, {"RPUSH", "{k}l", "z"}, {"RPOP", "{k}l", "0"},
		{"LRANGE", "{k}l", "0", "-1"}},
	// LREM
	{{"RPUSH", "{k}l", "a", "b", "a", "c", "a", "b"}, {"LREM", "{k}l", "1", "a"}, {"LRANGE", "{k}l", "0", "-1"},
		{"LREM", "{k}l", "-1", "b"}, {"LRANGE", "{k}l", "0", "-1"}, {"LREM", "{k}l", "0", "a"}, {"LRANGE", "{k}l", "0", "-1"},
		{"LREM", "{k}l", "5", "zz"}, {"LREM", "{k}l", "x", "b"}, {"LREM", "{k}none", "1", "a"}, {"LREM", "{k}none", "x", "a"},
		{"LREM", "{k}l", "-9223372036854775808", "b"}, {"LREM", "{k}l", "0", "c"}, {"EXISTS", "{k}l"}, {"LREM", "{k}l", "1"}},
	// LTRIM
	{{"RPUSH", "{k}l", "a", "b", "c", "d", "e"}, {"LTRIM", "{k}l", "1", "-2"}, {"LRANGE", "{k}l", "0", "-1"},
		{"LTRIM", "{k}l", "0", "100"}, {"LRANGE", "{k}l", "0", "-1"}, {"LTRIM", "{k}l", "-2", "-1"}, {"LRANGE", "{k}l", "0", "-1"},
		{"LTRIM", "{k}l", "x", "1"}, {"LTRIM", "{k}none", "x", "1"}, {"LTRIM", "{k}none", "0", "1"}, {"LTRIM", "{k}l", "5", "1"},
		{"EXISTS", "{k}l"}, {"RPUSH", "{k}l", "a", "b"}, {"LTRIM", "{k}l", "2", "5"}, {"EXISTS", "{k}l"}},
	// wrong kinds, both ways
	{{"SET", "{k}s", "v"}, {"RPUSH", "{k}l", "a"}, {"LPUSH", "{k}s", "a"}, {"RPUSH", "{k}s", "a"}, {"LPOP", "{k}s"}, {"RPOP", "{k}s", "2"},
		{"LLEN", "{k}s"}, {"LRANGE", "{k}s", "0", "-1"}, {"LINDEX", "{k}s", "0"}, {"LREM", "{k}s", "0", "v"}, {"LTRIM", "{k}s", "0", "1"},
		{"GET", "{k}l"}, {"MGET", "{k}s", "{k}l", "{k}none"}, {"GETRANGE", "{k}l", "0", "1"}, {"STRLEN", "{k}l"}, {"GETDEL", "{k}l"},
		{"GETEX", "{k}l"}, {"GETEX", "{k}l", "EX", "100"}, {"SET", "{k}l", "x", "GET"}, {"SETNX", "{k}l", "x"}, {"GETSET", "{k}l", "x"},
		{"APPEND", "{k}l", "x"}, {"INCR", "{k}l"}, {"DECRBY", "{k}l", "2"}, {"INCRBYFLOAT", "{k}l", "1"}, {"SETRANGE", "{k}l", "0", "x"},
		{"SET", "{k}l", "x", "NX"}, {"MSETNX", "{k}l", "x", "{k}n", "y"}, {"LLEN", "{k}l"}, {"TYPE", "{k}l"}, {"TYPE", "{k}s"},
		{"TYPE", "{k}none"}, {"OBJECT", "ENCODING", "{k}l"}, {"BLPOP", "{k}s", "0"}, {"BLPOP", "{k}none", "{k}s", "0"},
		{"BLPOP", "{k}l", "{k}s", "0"}, {"SET", "{k}l", "now a string"}, {"TYPE", "{k}l"}, {"GET", "{k}l"}, {"RPUSH", "{k}m", "a"},
		{"SET", "{k}m", "y", "XX"}, {"TYPE", "{k}m"}, {"RPUSH", "{k}n2", "a"}, {"MSET", "{k}n2", "s"}, {"TYPE", "{k}n2"}},
	// the keyspace's commands on a list
	{{"RPUSH", "{k}l", "a", "b"}, {"EXISTS", "{k}l", "{k}l"}, {"EXPIRE", "{k}l", "100"}, {"TTL", "{k}l"}, {"PEXPIRE", "{k}l", "200000"},
		{"PTTL", "{k}none"}, {"RPUSH", "{k}l", "c"}, {"TTL", "{k}l"}, {"PERSIST", "{k}l"}, {"TTL", "{k}l"}, {"RENAME", "{k}l", "{k}m"},
		{"TYPE", "{k}m"}, {"LRANGE", "{k}m", "0", "-1"}, {"COPY", "{k}m", "{k}c"}, {"LPOP", "{k}c"}, {"LRANGE", "{k}m", "0", "-1"},
		{"LRANGE", "{k}c", "0", "-1"}, {"KEYS", "{k}c"}, {"RENAMENX", "{k}c", "{k}m"}, {"DEL", "{k}m", "{k}c"}, {"EXISTS", "{k}m"},
		{"RPUSH", "{k}e", "a"}, {"EXPIRE", "{k}e", "100"}, {"LPOP", "{k}e"}, {"TTL", "{k}e"}, {"RPUSH", "{k}e", "a"}, {"TTL", "{k}e"},
		{"RPUSH", "{k}x", "a"}, {"PEXPIREAT", "{k}x", "1"}, {"EXISTS", "{k}x"}, {"LLEN", "{k}x"}},
	// lists in MULTI; BLPOP there is LPOP
	{{"RPUSH", "{k}l", "a"}, {"MULTI"}, {"LPUSH", "{k}l", "b"}, {"LRANGE", "{k}l", "0", "-1"}, {"LLEN", "{k}l"}, {"LINDEX", "{k}l", "0"},
		{"BLPOP", "{k}l", "0"}, {"BRPOP", "{k}none", "{k}l", "0"}, {"BLPOP", "{k}l", "0"}, {"BLPOP", "{k}l", "x"}, {"TYPE", "{k}l"},
		{"RPOP", "{k}l", "2"}, {"GET", "{k}l"}, {"EXEC"}, {"RPUSH", "{k}s", "x"}, {"MULTI"}, {"SET", "{k}s", "y"}, {"LPUSH", "{k}s", "z"},
		{"GET", "{k}s"}, {"EXEC"}},
	// WATCH sees a list's change
	{{"RPUSH", "{k}l", "a"}, {"WATCH", "{k}l"}, {"RPUSH", "{k}l", "b"}, {"MULTI"}, {"LPOP", "{k}l"}, {"EXEC"}, {"LLEN", "{k}l"},
		{"WATCH", "{k}l"}, {"LRANGE", "{k}l", "0", "-1"}, {"MULTI"}, {"LPOP", "{k}l"}, {"EXEC"}, {"WATCH", "{k}l"}, {"LREM", "{k}l", "0", "zz"},
		{"MULTI"}, {"LLEN", "{k}l"}, {"EXEC"}},
	// lists in scripts (BLPOP is not allowed there, in Redis 7.0)
	{{"EVAL", "redis.call('rpush', KEYS[1], 'a', 'b'); return redis.call('lrange', KEYS[1], 0, -1)", "1", "{k}l"},
		{"EVAL", "return redis.call('blpop', KEYS[1], 0)", "1", "{k}l"}, {"EVAL", "return redis.call('blpop', KEYS[1], 0)", "1", "{k}none"},
		{"EVAL", "return redis.call('lpop', KEYS[1], 5)", "1", "{k}l"}, {"EVAL", "return redis.call('llen', KEYS[1])", "1", "{k}l"},
		{"SET", "{k}s", "v"}, {"EVAL", "return redis.pcall('lpush', KEYS[1], 'a')", "1", "{k}s"},
		{"EVAL", "redis.call('del', KEYS[1]); redis.call('lpush', KEYS[1], 1); redis.call('pexpire', KEYS[1], 100000); return redis.call('type', KEYS[1])", "1", "{k}sig"},
		{"LRANGE", "{k}sig", "0", "-1"}, {"EVAL", "return redis.call('keys', KEYS[1])", "1", "{k}sig"},
		{"EVAL", "redis.call('del', KEYS[1]); return redis.call('keys', KEYS[1])", "1", "{k}sig"}, {"EXISTS", "{k}sig"}},
	// BLPOP, BRPOP: key order, timeouts' syntax, short waits
	{{"RPUSH", "{k}b", "b1", "b2"}, {"RPUSH", "{k}c", "c1"}, {"BLPOP", "{k}a", "{k}b", "{k}c", "0"}, {"BRPOP", "{k}a", "{k}c", "{k}b", "0"},
		{"BLPOP", "{k}c", "{k}b", "1"}, {"BLPOP", "{k}b", "{k}b", "0.5"}, {"BLPOP", "{k}a", "-1"}, {"BLPOP", "{k}a", "nan"},
		{"BLPOP", "{k}a", "NaN"}, {"BLPOP", "{k}a", "inf"}, {"BLPOP", "{k}a", "-inf"}, {"BLPOP", "{k}a", "1e300"}, {"BLPOP", "{k}a", "x"},
		{"BLPOP", "{k}a", ""}, {"BLPOP", "{k}a", " 1"}, {"BLPOP", "{k}a", "1 "}, {"BLPOP", "{k}a", "9.3e15"}, {"BLPOP", "{k}a", "-0.5"},
		{"BLPOP", "{k}a"}, {"BRPOP", "{k}a"}, {"BLPOP", "{k}a", "0.01"}, {"BRPOP", "{k}a", "{k}d", "0.02"}, {"BLPOP", "{k}a", "0x0.01p0"},
		{"BLPOP", "{k}a", "1e-2"}, {"RPUSH", "{k}a", "x"}, {"BLPOP", "{k}a", "1e-2"}, {"EXISTS", "{k}a"}},
}

// TestListsAgainstRedis: listStreams, in RESP2 and RESP3, answered as
// redis-server answers them, through a follower.
func TestListsAgainstRedis(t *testing.T) { againstRedis(t, "list", listStreams) }
