package resp

import (
	"strings"
	"testing"
)

// zsetStreams are command streams of the sorted set commands whose
// replies must be Redis 7.0's, byte for byte ("{k}" is the stream's key
// prefix): ZADD's options and their errors, scores' edges (inf, huge,
// tiny, hexadecimal, NaN refused), every range form with REV and LIMIT,
// ranks, wrong kinds both ways, the keyspace's commands, MULTI and
// scripts. Redis 7.0 prints a score with "%.17g".
var zsetStreams = [][][]string{
	// ZADD, ZSCORE, ZMSCORE, ZCARD, ZINCRBY
	{{"ZADD", "{k}z", "1", "a", "2", "b", "1.5", "c"}, {"ZSCORE", "{k}z", "c"}, {"ZSCORE", "{k}z", "q"}, {"ZSCORE", "{k}none", "a"},
		{"ZMSCORE", "{k}z", "a", "q", "b"}, {"ZMSCORE", "{k}none", "a", "b"}, {"ZCARD", "{k}z"}, {"ZCARD", "{k}none"},
		{"ZADD", "{k}z", "3", "a", "4", "d"}, {"ZADD", "{k}z", "CH", "3", "a", "5", "b", "6", "e"}, {"ZADD", "{k}z", "NX", "9", "a", "9", "f"},
		{"ZADD", "{k}z", "XX", "10", "a", "10", "g"}, {"ZADD", "{k}z", "XX", "CH", "11", "a", "10", "g"}, {"ZSCORE", "{k}z", "g"},
		{"ZADD", "{k}z", "GT", "CH", "1", "a", "20", "b"}, {"ZADD", "{k}z", "LT", "CH", "1", "a", "30", "b", "0", "h"},
		{"ZMSCORE", "{k}z", "a", "b", "h"}, {"ZADD", "{k}z", "XX", "GT", "100", "a"}, {"ZSCORE", "{k}z", "a"},
		{"ZINCRBY", "{k}z", "0.1", "a"}, {"ZINCRBY", "{k}z", "-5", "new"}, {"ZINCRBY", "{k}z", "x", "a"}, {"ZINCRBY", "{k}z", "1"},
		{"ZADD", "{k}z", "INCR", "2", "a"}, {"ZADD", "{k}z", "INCR", "NX", "2", "a"}, {"ZADD", "{k}z", "INCR", "XX", "2", "nope"},
		{"ZADD", "{k}z", "INCR", "GT", "-1", "a"}, {"ZADD", "{k}z", "INCR", "LT", "-1", "a"}, {"ZADD", "{k}z", "INCR", "1", "a", "2", "b"},
		{"ZADD", "{k}z", "1", "a", "1", "a"}, {"ZADD", "{k}z", "CH", "7", "dup", "8", "dup"}, {"ZSCORE", "{k}z", "dup"},
		{"ZADD", "{k}z", "NX", "XX", "1", "a"}, {"ZADD", "{k}z", "NX", "GT", "1", "a"}, {"ZADD", "{k}z", "GT", "LT", "1", "a"},
		{"ZADD", "{k}z", "XX", "GT", "LT", "1", "a"}, {"ZADD", "{k}z", "1"}, {"ZADD", "{k}z", "1", "a", "2"}, {"ZADD", "{k}z", "NX"},
		{"ZADD", "{k}z", "x", "a"}, {"ZADD", "{k}z", "nan", "a"}, {"ZADD", "{k}z", "", "a"}, {"ZADD", "{k}z", " 1", "a"},
		{"ZADD", "{k}z", "1 ", "a"}, {"ZADD", "{k}z", "1e400", "a"}, {"ZADD", "{k}z", "1", "a", "x", "b"}, {"ZADD", "{k}z", "1e-400", "u"}, {"ZADD", "{k}z", "-0x0.0p3", "u"}, {"ZADD", "{k}z", "4.9e-324", "u"}, {"ZCARD", "{k}z"},
		{"ZADD", "{k}xx", "XX", "1", "a"}, {"EXISTS", "{k}xx"}, {"ZADD", "{k}xx", "XX", "INCR", "1", "a"}, {"ZCARD", "{k}z", "x"}},
	// scores' edges
	{{"ZADD", "{k}z", "inf", "a", "-inf", "b", "+inf", "c", "1e308", "d", "-1.7976931348623157e308", "e", "5e-324", "f", "0x10", "g",
		"0x1p-2", "h", "-0", "i", "0.1", "j", "123456789012345678", "k", "1e-5", "l", "1E21", "m", "Infinity", "n", ".5", "o", "3.", "p"},
		{"ZRANGE", "{k}z", "0", "-1", "WITHSCORES"}, {"ZINCRBY", "{k}z", "-inf", "a"}, {"ZINCRBY", "{k}z", "inf", "a"},
		{"ZINCRBY", "{k}z", "1", "a"}, {"ZADD", "{k}z", "INCR", "-inf", "c"}, {"ZSCORE", "{k}z", "c"}, {"ZINCRBY", "{k}z", "1e308", "d"},
		{"ZSCORE", "{k}z", "d"}, {"ZSCORE", "{k}z", "j"}, {"ZSCORE", "{k}z", "f"}},
	// ZRANGE by rank, REV, WITHSCORES; ZREVRANGE; ZRANK, ZREVRANK
	{{"ZADD", "{k}z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e", "1", "aa", "1", "A"},
		{"ZRANGE", "{k}z", "0", "-1"}, {"ZRANGE", "{k}z", "0", "-1", "WITHSCORES"}, {"ZRANGE", "{k}z", "2", "3"},
		{"ZRANGE", "{k}z", "-2", "-1"}, {"ZRANGE", "{k}z", "-100", "100"}, {"ZRANGE", "{k}z", "5", "2"}, {"ZRANGE", "{k}z", "50", "60"},
		{"ZRANGE", "{k}z", "0", "1", "REV"}, {"ZRANGE", "{k}z", "0", "1", "REV", "WITHSCORES"}, {"ZREVRANGE", "{k}z", "0", "2"},
		{"ZREVRANGE", "{k}z", "0", "2", "WITHSCORES"}, {"ZREVRANGE", "{k}z", "0", "2", "REV"}, {"ZRANGE", "{k}z", "x", "1"},
		{"ZRANGE", "{k}z", "0", "1", "LIMIT", "0", "1"}, {"ZRANGE", "{k}z", "0", "1", "LIMIT", "0", "-1"}, {"ZRANGE", "{k}z", "0", "1", "BOGUS"},
		{"ZRANGE", "{k}none", "0", "-1"}, {"ZRANGE", "{k}z", "0"}, {"ZRANK", "{k}z", "a"}, {"ZRANK", "{k}z", "A"}, {"ZRANK", "{k}z", "e"},
		{"ZRANK", "{k}z", "q"}, {"ZRANK", "{k}none", "q"}, {"ZREVRANK", "{k}z", "a"}, {"ZREVRANK", "{k}z", "e"}, {"ZREVRANK", "{k}z", "q"},
		{"ZRANK", "{k}z"}},
	// by score: ZRANGE BYSCORE, ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZCOUNT, LIMIT
	{{"ZADD", "{k}z", "1", "a", "2", "b", "2", "bb", "3", "c", "4", "d", "5", "e", "-inf", "lo", "inf", "hi"},
		{"ZRANGEBYSCORE", "{k}z", "2", "4"}, {"ZRANGEBYSCORE", "{k}z", "(2", "4"}, {"ZRANGEBYSCORE", "{k}z", "2", "(4", "WITHSCORES"},
		{"ZRANGEBYSCORE", "{k}z", "-inf", "+inf"}, {"ZRANGEBYSCORE", "{k}z", "(-inf", "(inf"}, {"ZRANGEBYSCORE", "{k}z", "4", "2"},
		{"ZRANGEBYSCORE", "{k}z", "-inf", "inf", "LIMIT", "2", "3"}, {"ZRANGEBYSCORE", "{k}z", "-inf", "inf", "LIMIT", "-1", "3"},
		{"ZRANGEBYSCORE", "{k}z", "-inf", "inf", "LIMIT", "2", "-1"}, {"ZRANGEBYSCORE", "{k}z", "-inf", "inf", "LIMIT", "2", "0"},
		{"ZRANGEBYSCORE", "{k}z", "-inf", "inf", "LIMIT", "2"}, {"ZRANGEBYSCORE", "{k}z", "-inf", "inf", "LIMIT", "x", "1"},
		{"ZRANGEBYSCORE", "{k}z", "-inf", "inf", "WITHSCORES", "LIMIT", "1", "2"}, {"ZRANGEBYSCORE", "{k}z", "x", "1"},
		{"ZRANGEBYSCORE", "{k}z", "1", "nan"}, {"ZRANGEBYSCORE", "{k}z", "(", "3"}, {"ZRANGEBYSCORE", "{k}z", "", "3"},
		{"ZRANGEBYSCORE", "{k}z", " 2", "3"}, {"ZRANGEBYSCORE", "{k}z", "2 ", "3"}, {"ZRANGEBYSCORE", "{k}z", "1e999", "inf"},
		{"ZRANGEBYSCORE", "{k}z", "0x2", "3"}, {"ZRANGEBYSCORE", "{k}z", "1", "2", "REV"}, {"ZRANGEBYSCORE", "{k}z", "1", "2", "BYSCORE"},
		{"ZREVRANGEBYSCORE", "{k}z", "4", "2"}, {"ZREVRANGEBYSCORE", "{k}z", "(4", "(2", "WITHSCORES"}, {"ZREVRANGEBYSCORE", "{k}z", "2", "4"},
		{"ZREVRANGEBYSCORE", "{k}z", "+inf", "-inf", "LIMIT", "1", "2"}, {"ZREVRANGEBYSCORE", "{k}z", "inf", "(inf"},
		{"ZRANGE", "{k}z", "2", "4", "BYSCORE"}, {"ZRANGE", "{k}z", "4", "2", "BYSCORE", "REV", "WITHSCORES"},
		{"ZRANGE", "{k}z", "(5", "-inf", "REV", "BYSCORE", "LIMIT", "1", "3"}, {"ZRANGE", "{k}z", "1", "2", "BYSCORE", "BYSCORE"},
		{"ZRANGE", "{k}z", "1", "2", "BYSCORE", "BYLEX"}, {"ZRANGE", "{k}z", "1", "2", "REV", "REV"},
		{"ZCOUNT", "{k}z", "2", "4"}, {"ZCOUNT", "{k}z", "(2", "(4"}, {"ZCOUNT", "{k}z", "-inf", "inf"}, {"ZCOUNT", "{k}z", "5", "1"},
		{"ZCOUNT", "{k}none", "1", "2"}, {"ZCOUNT", "{k}z", "a", "2"}, {"ZCOUNT", "{k}z", "1"}, {"ZRANGEBYSCORE", "{k}none", "1", "2"}},
	// by member: ZRANGEBYLEX, ZREVRANGEBYLEX, ZRANGE BYLEX, ZLEXCOUNT
	{{"ZADD", "{k}z", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e", "0", "ab", "0", "", "0", "\xff"},
		{"ZRANGEBYLEX", "{k}z", "-", "+"}, {"ZRANGEBYLEX", "{k}z", "[a", "[c"}, {"ZRANGEBYLEX", "{k}z", "(a", "(c"},
		{"ZRANGEBYLEX", "{k}z", "[b", "+"}, {"ZRANGEBYLEX", "{k}z", "-", "(b"}, {"ZRANGEBYLEX", "{k}z", "+", "-"},
		{"ZRANGEBYLEX", "{k}z", "[c", "[a"}, {"ZRANGEBYLEX", "{k}z", "-", "+", "LIMIT", "1", "2"}, {"ZRANGEBYLEX", "{k}z", "[", "(b"},
		{"ZRANGEBYLEX", "{k}z", "a", "+"}, {"ZRANGEBYLEX", "{k}z", "-", "+", "WITHSCORES"}, {"ZRANGEBYLEX", "{k}z", "[", "["},
		{"ZREVRANGEBYLEX", "{k}z", "+", "-"}, {"ZREVRANGEBYLEX", "{k}z", "[c", "(a"}, {"ZREVRANGEBYLEX", "{k}z", "+", "-", "LIMIT", "2", "2"},
		{"ZREVRANGEBYLEX", "{k}z", "-", "+"}, {"ZRANGE", "{k}z", "[b", "[d", "BYLEX"}, {"ZRANGE", "{k}z", "[d", "[b", "BYLEX", "REV"},
		{"ZRANGE", "{k}z", "-", "+", "BYLEX", "LIMIT", "0", "3"}, {"ZRANGE", "{k}z", "-", "+", "BYLEX", "WITHSCORES"},
		{"ZLEXCOUNT", "{k}z", "-", "+"}, {"ZLEXCOUNT", "{k}z", "[b", "(d"}, {"ZLEXCOUNT", "{k}z", "x", "+"}, {"ZLEXCOUNT", "{k}none", "-", "+"},
		{"ZRANGEBYLEX", "{k}none", "-", "+"}},
	// ZREM; an emptied sorted set is gone
	{{"ZADD", "{k}z", "1", "a", "2", "b", "3", "c"}, {"ZREM", "{k}z", "a", "a", "zz"}, {"ZREM", "{k}z", "q"}, {"ZREM", "{k}none", "a"},
		{"ZCARD", "{k}z"}, {"ZRANGE", "{k}z", "0", "-1"}, {"ZRANK", "{k}z", "c"}, {"ZREM", "{k}z", "b", "c"}, {"EXISTS", "{k}z"},
		{"TYPE", "{k}z"}, {"ZREM", "{k}z"}},
	// wrong kinds, both ways
	{{"SET", "{k}s", "v"}, {"ZADD", "{k}z", "1", "a"}, {"HSET", "{k}h", "a", "1"}, {"SADD", "{k}set", "a"}, {"ZADD", "{k}s", "1", "a"},
		{"ZADD", "{k}h", "1", "a"}, {"ZADD", "{k}set", "1", "a"}, {"ZSCORE", "{k}s", "a"}, {"ZMSCORE", "{k}h", "a"}, {"ZCARD", "{k}set"},
		{"ZRANGE", "{k}s", "0", "-1"}, {"ZRANGEBYSCORE", "{k}h", "0", "1"}, {"ZRANGEBYLEX", "{k}set", "-", "+"}, {"ZRANK", "{k}s", "a"},
		{"ZREM", "{k}s", "a"}, {"ZINCRBY", "{k}h", "1", "a"}, {"ZCOUNT", "{k}s", "0", "1"}, {"ZCOUNT", "{k}s", "x", "1"},
		{"ZRANGE", "{k}s", "x", "1"}, {"GET", "{k}z"}, {"HGET", "{k}z", "a"}, {"SADD", "{k}z", "a"}, {"SMEMBERS", "{k}z"},
		{"HGETALL", "{k}z"}, {"LPUSH", "{k}z", "x"}, {"INCR", "{k}z"}, {"TYPE", "{k}z"}, {"OBJECT", "ENCODING", "{k}z"},
		{"SET", "{k}z", "now a string"}, {"TYPE", "{k}z"}},
	// OBJECT ENCODING: listpack until Redis converts, then skiplist for good
	{{"ZADD", "{k}z", "1", "a"}, {"OBJECT", "ENCODING", "{k}z"}, {"ZADD", "{k}z", "1", strings.Repeat("m", 65)},
		{"OBJECT", "ENCODING", "{k}z"}, {"ZREM", "{k}z", strings.Repeat("m", 65)}, {"OBJECT", "ENCODING", "{k}z"},
		{"ZADD", "{k}y", "1", strings.Repeat("m", 64)}, {"OBJECT", "ENCODING", "{k}y"}},
	// the keyspace's commands on a sorted set
	{{"ZADD", "{k}z", "1", "a", "2", "b"}, {"EXPIRE", "{k}z", "100"}, {"TTL", "{k}z"}, {"ZADD", "{k}z", "3", "c"}, {"TTL", "{k}z"},
		{"ZINCRBY", "{k}z", "5", "a"}, {"TTL", "{k}z"}, {"PERSIST", "{k}z"}, {"RENAME", "{k}z", "{k}g"}, {"ZRANGE", "{k}g", "0", "-1", "WITHSCORES"},
		{"EXISTS", "{k}z"}, {"COPY", "{k}g", "{k}c"}, {"ZADD", "{k}c", "0", "a"}, {"ZRANGE", "{k}g", "0", "-1"}, {"ZRANGE", "{k}c", "0", "-1"},
		{"ZRANGEBYSCORE", "{k}c", "-inf", "inf", "WITHSCORES"}, {"COPY", "{k}c", "{k}g", "REPLACE"}, {"ZRANGE", "{k}g", "0", "-1"},
		{"DEL", "{k}g", "{k}c"}, {"EXISTS", "{k}g", "{k}c"}, {"ZADD", "{k}x", "1", "a"}, {"PEXPIREAT", "{k}x", "1"}, {"EXISTS", "{k}x"},
		{"ZCARD", "{k}x"}, {"ZRANGE", "{k}x", "0", "-1"}, {"ZADD", "{k}x", "2", "b"}, {"ZRANGE", "{k}x", "0", "-1", "WITHSCORES"},
		{"ZADD", "{k}s", "1", "a"}, {"SET", "{k}s", "v"}, {"GET", "{k}s"}, {"ZADD", "{k}s2", "1", "a"}, {"KEYS", "{k}s*"}},
	// sorted sets in MULTI and scripts
	{{"ZADD", "{k}z", "1", "a"}, {"MULTI"}, {"ZADD", "{k}z", "2", "b"}, {"ZSCORE", "{k}z", "b"}, {"ZRANGE", "{k}z", "0", "-1", "WITHSCORES"},
		{"ZINCRBY", "{k}z", "nan", "a"}, {"ZINCRBY", "{k}z", "5", "a"}, {"ZRANK", "{k}z", "a"}, {"EXEC"},
		{"EVAL", "redis.call('ZADD', KEYS[1], 3, 'c'); return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')", "1", "{k}z"},
		{"EVAL", "return redis.call('ZSCORE', KEYS[1], 'c')", "1", "{k}z"},
		{"EVAL", "redis.call('ZREM', KEYS[1], 'a'); return {redis.call('ZCARD', KEYS[1]), redis.call('ZRANK', KEYS[1], 'c'), redis.call('ZRANGEBYSCORE', KEYS[1], '(2', '+inf')}", "1", "{k}z"},
		{"EVAL", "return redis.call('ZINCRBY', KEYS[1], 1, 'b')", "1", "{k}z"},
		{"EVAL", "return redis.pcall('ZADD', KEYS[1], 'x', 'b')", "1", "{k}z"},
		{"EVAL", "redis.call('SET', KEYS[1], 'x'); return redis.pcall('ZADD', KEYS[1], 1, 'b')", "1", "{k}w"},
		{"ZRANGE", "{k}z", "0", "-1", "WITHSCORES"}},
	// ZPOPMIN, ZPOPMAX
	{{"ZADD", "{k}z", "1", "a", "2", "b", "3", "c", "4", "d", "1.5", "e"}, {"ZPOPMIN", "{k}z"}, {"ZPOPMAX", "{k}z"},
		{"ZPOPMIN", "{k}z", "2"}, {"ZPOPMIN", "{k}z", "0"}, {"ZPOPMIN", "{k}z", "-1"}, {"ZPOPMIN", "{k}z", "x"}, {"ZPOPMIN", "{k}z", "1", "2"},
		{"ZPOPMAX", "{k}z", "10"}, {"EXISTS", "{k}z"}, {"ZPOPMIN", "{k}z"}, {"ZPOPMIN", "{k}z", "3"}, {"ZPOPMAX", "{k}none"},
		{"SET", "{k}s", "v"}, {"ZPOPMIN", "{k}s"}, {"ZPOPMAX", "{k}s", "1"}, {"ZPOPMIN"}, {"ZADD", "{k}z", "1", "a"},
		{"ZPOPMIN", "{k}z", "-0"}, {"ZPOPMAX", "{k}z", "1.5"}, {"ZPOPMIN", "{k}z", "9223372036854775808"}, {"ZPOPMAX", "{k}z", ""},
		{"ZPOPMIN", "{k}z", " 1"}, {"ZPOPMIN", "{k}z", "+1"}, {"ZPOPMAX", "{k}z", "-1"}, {"ZPOPMAX", "{k}z", "x"},
		{"ZPOPMAX", "{k}z", "1", "2"}, {"ZPOPMIN", "{k}z", "x", "y"}, {"ZPOPMIN", "{k}none", "-1"}, {"ZPOPMAX", "{k}none", "x"},
		{"ZPOPMIN", "{k}none", "1", "2"}, {"ZPOPMIN", "{k}s", "x"}, {"ZPOPMAX", "{k}s", "-1"}, {"ZRANGE", "{k}z", "0", "-1"},
		{"ZPOPMIN", "{k}z", "9223372036854775807"}},
	// ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX
	{{"ZADD", "{k}z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e", "6", "f"}, {"ZREMRANGEBYRANK", "{k}z", "0", "0"},
		{"ZREMRANGEBYRANK", "{k}z", "-1", "-1"}, {"ZREMRANGEBYRANK", "{k}z", "5", "1"}, {"ZREMRANGEBYRANK", "{k}z", "x", "1"},
		{"ZRANGE", "{k}z", "0", "-1"}, {"ZREMRANGEBYSCORE", "{k}z", "(2", "3"}, {"ZREMRANGEBYSCORE", "{k}z", "9", "10"},
		{"ZREMRANGEBYSCORE", "{k}z", "x", "1"}, {"ZRANGE", "{k}z", "0", "-1", "WITHSCORES"}, {"ZREMRANGEBYSCORE", "{k}z", "-inf", "+inf"},
		{"EXISTS", "{k}z"}, {"ZREMRANGEBYRANK", "{k}none", "0", "-1"}, {"ZADD", "{k}l", "0", "a", "0", "b", "0", "c", "0", "d"},
		{"ZREMRANGEBYLEX", "{k}l", "[b", "(d"}, {"ZREMRANGEBYLEX", "{k}l", "b", "d"}, {"ZRANGE", "{k}l", "0", "-1"},
		{"ZREMRANGEBYLEX", "{k}l", "-", "+"}, {"EXISTS", "{k}l"}, {"SET", "{k}s", "v"}, {"ZREMRANGEBYRANK", "{k}s", "0", "1"},
		{"ZREMRANGEBYSCORE", "{k}s", "x", "1"}, {"ZREMRANGEBYLEX", "{k}s", "-", "+"}, {"ZREMRANGEBYRANK", "{k}z", "0"}},
	// ZRANDMEMBER's arguments and the answers that are not random; ZSCAN of a small set
	{{"ZRANDMEMBER", "{k}none"}, {"ZRANDMEMBER", "{k}none", "3"}, {"ZRANDMEMBER", "{k}none", "-3", "WITHSCORES"}, {"ZADD", "{k}z", "1.5", "a"},
		{"ZRANDMEMBER", "{k}z"}, {"ZRANDMEMBER", "{k}z", "0"}, {"ZRANDMEMBER", "{k}z", "5"}, {"ZRANDMEMBER", "{k}z", "-3"},
		{"ZRANDMEMBER", "{k}z", "2", "WITHSCORES"}, {"ZRANDMEMBER", "{k}z", "-2", "withscores"}, {"ZRANDMEMBER", "{k}z", "1", "WITHSCORE"},
		{"ZRANDMEMBER", "{k}z", "1", "WITHSCORES", "x"}, {"ZRANDMEMBER", "{k}z", "x"}, {"ZRANDMEMBER", "{k}z", "-9223372036854775808"},
		{"ZRANDMEMBER", "{k}z", "9223372036854775807", "WITHSCORES"}, {"SET", "{k}s", "v"}, {"ZRANDMEMBER", "{k}s"},
		{"ZSCAN", "{k}z", "0"}, {"ZADD", "{k}y", "0.1", "a", "inf", "b", "-3", "ab"}, {"ZSCAN", "{k}y", "0", "MATCH", "a*"},
		{"ZSCAN", "{k}y", "0", "COUNT", "1"}, {"ZSCAN", "{k}y", "x"}, {"ZSCAN", "{k}none", "0"}, {"ZSCAN", "{k}s", "0"}, {"ZSCAN", "{k}y"}},
	// ZRANGESTORE, ZUNIONSTORE, ZINTERSTORE
	{{"ZADD", "{k}a", "1", "x", "2", "y", "3", "z"}, {"ZADD", "{k}b", "10", "y", "20", "z", "30", "w"}, {"SADD", "{k}s", "x", "w", "v"},
		{"ZRANGESTORE", "{k}d", "{k}a", "0", "1"}, {"ZRANGE", "{k}d", "0", "-1", "WITHSCORES"}, {"ZRANGESTORE", "{k}d", "{k}b", "(10", "+inf", "BYSCORE", "LIMIT", "0", "1"},
		{"ZRANGE", "{k}d", "0", "-1", "WITHSCORES"}, {"ZRANGESTORE", "{k}d", "{k}a", "[z", "-", "BYLEX", "REV"}, {"ZRANGE", "{k}d", "0", "-1"},
		{"ZRANGESTORE", "{k}d", "{k}none", "0", "-1"}, {"EXISTS", "{k}d"}, {"ZRANGESTORE", "{k}d", "{k}a", "0", "-1", "WITHSCORES"},
		{"ZRANGESTORE", "{k}d", "{k}s", "0", "-1"}, {"ZRANGESTORE", "{k}a", "{k}a", "1", "2"}, {"ZRANGE", "{k}a", "0", "-1", "WITHSCORES"},
		{"ZADD", "{k}a", "1", "x"}, {"ZUNIONSTORE", "{k}u", "2", "{k}a", "{k}b"}, {"ZRANGE", "{k}u", "0", "-1", "WITHSCORES"},
		{"ZUNIONSTORE", "{k}u", "3", "{k}a", "{k}b", "{k}s", "WEIGHTS", "2", "0.5", "-1", "AGGREGATE", "MAX"}, {"ZRANGE", "{k}u", "0", "-1", "WITHSCORES"},
		{"ZINTERSTORE", "{k}i", "2", "{k}a", "{k}b", "AGGREGATE", "min"}, {"ZRANGE", "{k}i", "0", "-1", "WITHSCORES"},
		{"ZINTERSTORE", "{k}i", "2", "{k}a", "{k}none"}, {"EXISTS", "{k}i"}, {"ZUNIONSTORE", "{k}u", "1", "{k}none"}, {"EXISTS", "{k}u"},
		{"ZADD", "{k}inf", "inf", "x"}, {"ZADD", "{k}ninf", "-inf", "x"}, {"ZUNIONSTORE", "{k}u", "2", "{k}inf", "{k}ninf"}, {"ZSCORE", "{k}u", "x"},
		{"ZUNIONSTORE", "{k}u", "1", "{k}inf", "WEIGHTS", "0"}, {"ZSCORE", "{k}u", "x"},
		{"ZUNIONSTORE", "{k}u", "0", "{k}a"}, {"ZUNIONSTORE", "{k}u", "x", "{k}a"}, {"ZUNIONSTORE", "{k}u", "3", "{k}a"},
		{"ZUNIONSTORE", "{k}u", "1", "{k}a", "WEIGHTS"}, {"ZUNIONSTORE", "{k}u", "1", "{k}a", "WEIGHTS", "x"}, {"ZUNIONSTORE", "{k}u", "1", "{k}a", "AGGREGATE", "avg"},
		{"ZUNIONSTORE", "{k}u", "1", "{k}a", "BOGUS"}, {"SET", "{k}str", "v"}, {"ZUNIONSTORE", "{k}u", "2", "{k}a", "{k}str"},
		{"ZINTERSTORE", "{k}u", "2", "{k}str", "{k}none"}, {"ZUNIONSTORE", "{k}str", "1", "{k}a"}, {"TYPE", "{k}str"}},
}

func TestZSetsAgainstRedis(t *testing.T) { collAgainstRedis(t, "zset", zsetStreams) }

// zsetMoreStreams are the sorted sets' pops from several keys and their
// algebra as reads, against Redis 7.0 byte for byte: ZMPOP, BZPOPMIN,
// BZPOPMAX and BZMPOP where a key holds members (or a short timeout
// passes), their refusals in Redis's order, ZUNION, ZINTER, ZDIFF,
// ZINTERCARD and ZDIFFSTORE with WEIGHTS, AGGREGATE, WITHSCORES and
// LIMIT, sets as sources, wrong kinds, MULTI and scripts.
var zsetMoreStreams = [][][]string{
	// ZMPOP and the blocking pops that find members
	{{"ZADD", "{k}a", "1", "x", "2", "y", "3", "z"}, {"ZADD", "{k}b", "-1", "p", "5", "q"}, {"ZMPOP", "1", "{k}a", "MIN"},
		{"ZMPOP", "2", "{k}none", "{k}a", "MAX", "COUNT", "10"}, {"EXISTS", "{k}a"}, {"ZMPOP", "2", "{k}a", "{k}b", "min", "count", "1"},
		{"ZMPOP", "1", "{k}none", "MIN"}, {"ZADD", "{k}a", "1.5", "x", "inf", "y"}, {"BZPOPMIN", "{k}none", "{k}a", "0"},
		{"BZPOPMAX", "{k}a", "{k}b", "1"}, {"BZPOPMAX", "{k}b", "0.5"}, {"ZADD", "{k}b", "7", "r", "8", "s"}, {"BZMPOP", "0", "2", "{k}none", "{k}b", "MIN"},
		{"ZADD", "{k}c", "1", "a", "2", "b", "3", "c"}, {"BZMPOP", "1", "1", "{k}c", "MAX", "COUNT", "2"}, {"ZRANGE", "{k}c", "0", "-1", "WITHSCORES"},
		{"BZPOPMIN", "{k}none", "0.01"}, {"BZMPOP", "0.01", "1", "{k}none", "MIN"}, {"BZPOPMAX", "{k}none", "{k}none2", "0.01"}},
	// their refusals
	{{"ZADD", "{k}a", "1", "x"}, {"SET", "{k}s", "v"}, {"ZMPOP", "0", "{k}a", "MIN"}, {"ZMPOP", "x", "{k}a", "MIN"},
		{"ZMPOP", "-1", "{k}a", "MIN"}, {"ZMPOP", "2", "{k}a", "MIN"}, {"ZMPOP", "1", "{k}a", "LEFT"}, {"ZMPOP", "1", "{k}a", "MIN", "COUNT", "0"},
		{"ZMPOP", "1", "{k}a", "MIN", "COUNT", "-1"}, {"ZMPOP", "1", "{k}a", "MIN", "COUNT", "x"}, {"ZMPOP", "1", "{k}a", "MIN", "COUNT"},
		{"ZMPOP", "1", "{k}a", "MIN", "COUNT", "1", "COUNT", "1"}, {"ZMPOP", "1", "{k}a", "MIN", "BOGUS"}, {"ZMPOP", "1", "{k}s", "MIN"},
		{"ZMPOP", "2", "{k}s", "{k}a", "MIN"}, {"ZMPOP", "2", "{k}none", "{k}s", "MAX"}, {"ZMPOP", "1", "{k}a"}, {"ZMPOP", "1"},
		{"BZPOPMIN", "{k}a", "x"}, {"BZPOPMIN", "{k}a", "-1"}, {"BZPOPMIN", "{k}a", "nan"}, {"BZPOPMIN", "{k}s", "0"},
		{"BZPOPMAX", "{k}none", "{k}s", "0"}, {"BZPOPMIN", "{k}a"}, {"BZMPOP", "x", "1", "{k}a", "MIN"}, {"BZMPOP", "-1", "1", "{k}a", "MIN"},
		{"BZMPOP", "0", "0", "{k}a", "MIN"}, {"BZMPOP", "x", "0", "{k}a", "MIN"}, {"BZMPOP", "0", "1", "{k}a", "UP"},
		{"BZMPOP", "0", "1", "{k}s", "MIN"}, {"BZMPOP", "0", "1", "{k}a"}, {"ZSCORE", "{k}a", "x"}},
	// ZUNION, ZINTER, ZDIFF, ZINTERCARD, ZDIFFSTORE
	{{"ZADD", "{k}a", "1", "x", "2", "y", "3", "z"}, {"ZADD", "{k}b", "10", "y", "20", "z", "30", "w"}, {"SADD", "{k}s", "x", "w", "v"},
		{"ZUNION", "2", "{k}a", "{k}b"}, {"ZUNION", "2", "{k}a", "{k}b", "WITHSCORES"}, {"ZUNION", "3", "{k}a", "{k}b", "{k}s", "WEIGHTS", "2", "0.5", "-1", "AGGREGATE", "MAX", "WITHSCORES"},
		{"ZUNION", "2", "{k}a", "{k}none", "withscores"}, {"ZUNION", "1", "{k}none"}, {"ZINTER", "2", "{k}a", "{k}b", "WITHSCORES"},
		{"ZINTER", "2", "{k}a", "{k}b", "AGGREGATE", "MIN", "WITHSCORES"}, {"ZINTER", "2", "{k}a", "{k}s", "WEIGHTS", "1", "5", "WITHSCORES"},
		{"ZINTER", "2", "{k}a", "{k}none"}, {"ZDIFF", "2", "{k}a", "{k}b"}, {"ZDIFF", "2", "{k}b", "{k}a", "WITHSCORES"},
		{"ZDIFF", "3", "{k}b", "{k}s", "{k}none", "WITHSCORES"}, {"ZDIFF", "1", "{k}s", "WITHSCORES"}, {"ZDIFF", "2", "{k}none", "{k}a"},
		{"ZINTERCARD", "2", "{k}a", "{k}b"}, {"ZINTERCARD", "2", "{k}a", "{k}b", "LIMIT", "1"}, {"ZINTERCARD", "2", "{k}a", "{k}b", "LIMIT", "0"},
		{"ZINTERCARD", "1", "{k}s"}, {"ZINTERCARD", "2", "{k}a", "{k}none"}, {"ZDIFFSTORE", "{k}d", "2", "{k}b", "{k}a"},
		{"ZRANGE", "{k}d", "0", "-1", "WITHSCORES"}, {"ZDIFFSTORE", "{k}d", "2", "{k}a", "{k}a"}, {"EXISTS", "{k}d"},
		{"ZDIFFSTORE", "{k}d", "1", "{k}s"}, {"ZRANGE", "{k}d", "0", "-1", "WITHSCORES"},
		{"ZADD", "{k}inf", "inf", "x"}, {"ZADD", "{k}ninf", "-inf", "x"}, {"ZUNION", "2", "{k}inf", "{k}ninf", "WITHSCORES"},
		{"ZUNION", "1", "{k}inf", "WEIGHTS", "0", "WITHSCORES"}, {"ZINTER", "2", "{k}inf", "{k}ninf", "AGGREGATE", "MAX", "WITHSCORES"},
		{"ZADD", "{k}tie", "1", "b", "1", "a", "0", "c"}, {"ZUNION", "2", "{k}tie", "{k}a", "WITHSCORES"}},
	// the algebra's refusals
	{{"ZADD", "{k}a", "1", "x"}, {"SET", "{k}str", "v"}, {"ZUNION", "0", "{k}a"}, {"ZINTER", "x", "{k}a"}, {"ZDIFF", "0", "{k}a"},
		{"ZINTERCARD", "0", "{k}a"}, {"ZINTERCARD", "x", "{k}a"}, {"ZUNION", "3", "{k}a"}, {"ZUNION", "1", "{k}a", "WEIGHTS"},
		{"ZUNION", "1", "{k}a", "WEIGHTS", "x"}, {"ZUNION", "1", "{k}a", "WEIGHTS", "nan"}, {"ZUNION", "1", "{k}a", "AGGREGATE", "avg"},
		{"ZUNION", "1", "{k}a", "AGGREGATE"}, {"ZUNION", "1", "{k}a", "BOGUS"}, {"ZDIFF", "1", "{k}a", "WEIGHTS", "1"},
		{"ZDIFF", "1", "{k}a", "AGGREGATE", "SUM"}, {"ZINTERCARD", "1", "{k}a", "WITHSCORES"}, {"ZINTERCARD", "1", "{k}a", "LIMIT", "-1"},
		{"ZINTERCARD", "1", "{k}a", "LIMIT", "x"}, {"ZINTERCARD", "1", "{k}a", "LIMIT"}, {"ZINTERCARD", "1", "{k}a", "WEIGHTS", "1"},
		{"ZUNION", "2", "{k}a", "{k}str"}, {"ZINTER", "2", "{k}str", "{k}none"}, {"ZDIFF", "2", "{k}a", "{k}str"},
		{"ZINTERCARD", "2", "{k}a", "{k}str"}, {"ZDIFFSTORE", "{k}d", "0", "{k}a"}, {"ZDIFFSTORE", "{k}d", "1", "{k}a", "WITHSCORES"},
		{"ZDIFFSTORE", "{k}d", "1", "{k}a", "WEIGHTS", "1"}, {"ZDIFFSTORE", "{k}d", "2", "{k}a", "{k}str"}, {"ZUNIONSTORE", "{k}d", "1", "{k}a", "WITHSCORES"},
		{"ZUNION", "1"}, {"ZDIFFSTORE", "{k}d", "1"}},
	// in MULTI (the blocking pops answer at once there) and scripts
	{{"ZADD", "{k}a", "1", "x", "2", "y"}, {"ZADD", "{k}b", "5", "y"}, {"MULTI"}, {"ZUNION", "2", "{k}a", "{k}b", "WITHSCORES"},
		{"ZINTERCARD", "2", "{k}a", "{k}b"}, {"ZMPOP", "1", "{k}a", "MAX"}, {"BZPOPMIN", "{k}a", "0"}, {"BZPOPMIN", "{k}a", "0"},
		{"BZMPOP", "0", "1", "{k}a", "MIN"}, {"ZDIFFSTORE", "{k}d", "1", "{k}b"}, {"ZDIFF", "2", "{k}d", "{k}a"}, {"EXEC"},
		{"ZADD", "{k}a", "1", "x", "2", "y"},
		{"EVAL", "return redis.call('ZMPOP', 2, KEYS[1], KEYS[2], 'MIN', 'COUNT', 5)", "2", "{k}none", "{k}a"},
		{"EVAL", "return redis.call('BZMPOP', 0, 1, KEYS[1], 'MIN')", "1", "{k}a"},
		{"EVAL", "return redis.pcall('BZPOPMIN', KEYS[1], 0)", "1", "{k}a"},
		{"EVAL", "return redis.call('ZUNION', 2, KEYS[1], KEYS[2], 'WITHSCORES')", "2", "{k}b", "{k}d"},
		{"EVAL", "return {redis.call('ZINTERCARD', 2, KEYS[1], KEYS[2]), redis.call('ZDIFFSTORE', KEYS[3], 1, KEYS[1])}", "3", "{k}b", "{k}d", "{k}e"},
		{"EVAL", "return redis.call('ZDIFF', 1, KEYS[1], 'WITHSCORES')", "1", "{k}e"}},
}

func TestZSetMoreAgainstRedis(t *testing.T) { collAgainstRedis(t, "zmore", zsetMoreStreams) }
