package resp

import (
	"strings"
	"testing"
)

// streamStreams are command streams of the stream commands whose replies
// must be Redis 7.0's, byte for byte ("{k}" is the stream's key prefix):
// XADD's ids and options and their errors, ids' edges (0-0, 0-1, the
// last id there is, ms-* at the sequence's end, ids below the top,
// malformed ones), ranges with exclusive bounds and COUNT, XDEL, XTRIM,
// XSETID, XREAD without blocking, XINFO STREAM, wrong kinds both ways,
// the keyspace's commands, MULTI and scripts. Ids are given (a "*" id is
// the clock's, which two servers do not share; fsm's tests hold it).
var streamStreams = [][][]string{
	// XADD: ids and their errors
	{{"XADD", "{k}s", "0-0", "a", "b"}, {"EXISTS", "{k}s"}, {"XADD", "{k}s", "0-1", "a", "b"}, {"XADD", "{k}s", "0-1", "a", "b"},
		{"XADD", "{k}s", "0-*", "a", "b"}, {"XADD", "{k}s", "1", "f", "v", "g", "w"}, {"XADD", "{k}s", "1", "a", "b"},
		{"XADD", "{k}s", "1-*", "a", "b"}, {"XADD", "{k}s", "5-18446744073709551615", "a", "b"}, {"XADD", "{k}s", "5-*", "a", "b"},
		{"XADD", "{k}s", "4-*", "a", "b"}, {"XADD", "{k}s", "6-*", "a", "b"}, {"XADD", "{k}s", "3-9", "a", "b"},
		{"XADD", "{k}s", "1-x", "a", "b"}, {"XADD", "{k}s", "foo", "a", "b"}, {"XADD", "{k}s", "18446744073709551616-1", "a", "b"},
		{"XADD", "{k}s", "-1", "a", "b"}, {"XADD", "{k}s", "-", "a", "b"}, {"XADD", "{k}s", "+", "a", "b"}, {"XADD", "{k}s", "7-", "a", "b"},
		{"XADD", "{k}s", " 7", "a", "b"}, {"XADD", "{k}s", "+8-1", "a", "b"}, {"XADD", "{k}s", "09-0", "a", "b"}, {"XADD", "{k}s", "10--01", "a", "b"},
		{"XADD", "{k}s", "11-*", "a"}, {"XADD", "{k}s", "11-1", "a", "b", "c"}, {"XADD", "{k}s"}, {"XADD", "{k}s", "11-1"},
		{"XADD", "{k}s", "12", "", ""}, {"XLEN", "{k}s"}, {"XRANGE", "{k}s", "-", "+"},
		{"XADD", "{k}m", "18446744073709551615-18446744073709551614", "a", "b"}, {"XADD", "{k}m", "18446744073709551615-*", "a", "b"},
		{"XADD", "{k}m", "18446744073709551615-*", "a", "b"}, {"XADD", "{k}m", "*", "a", "b"}, {"XRANGE", "{k}m", "-", "+"}, {"XINFO", "STREAM", "{k}m"}},
	// XADD's options: NOMKSTREAM, MAXLEN and MINID with = and ~, LIMIT
	{{"XADD", "{k}n", "NOMKSTREAM", "1-1", "a", "b"}, {"EXISTS", "{k}n"}, {"XADD", "{k}s", "1-1", "a", "b"}, {"XADD", "{k}s", "nomkstream", "2-1", "a", "b"},
		{"XADD", "{k}s", "MAXLEN", "2", "3-1", "a", "b"}, {"XADD", "{k}s", "maxlen", "=", "2", "4-1", "a", "b"}, {"XRANGE", "{k}s", "-", "+"},
		{"XADD", "{k}s", "MAXLEN", "~", "1", "5-1", "a", "b"}, {"XLEN", "{k}s"}, {"XADD", "{k}s", "MINID", "5", "6-1", "a", "b"},
		{"XRANGE", "{k}s", "-", "+"}, {"XADD", "{k}s", "MINID", "~", "7", "LIMIT", "10", "7-1", "a", "b"}, {"XLEN", "{k}s"},
		{"XADD", "{k}s", "MAXLEN", "0", "8-1", "a", "b"}, {"XLEN", "{k}s"}, {"EXISTS", "{k}s"}, {"XINFO", "STREAM", "{k}s"},
		{"XADD", "{k}s", "MAXLEN", "-1", "9-1", "a", "b"}, {"XADD", "{k}s", "MAXLEN", "x", "9-1", "a", "b"},
		{"XADD", "{k}s", "MAXLEN", "1", "LIMIT", "10", "9-1", "a", "b"}, {"XADD", "{k}s", "MAXLEN", "~", "1", "LIMIT", "-1", "9-1", "a", "b"},
		{"XADD", "{k}s", "MAXLEN", "~", "1", "LIMIT", "x", "9-1", "a", "b"}, {"XADD", "{k}s", "MAXLEN", "1", "MINID", "1", "9-1", "a", "b"},
		{"XADD", "{k}s", "LIMIT", "5", "9-1", "a", "b"}, {"XADD", "{k}s", "LIMIT", "0", "9-1", "a", "b"}, {"XADD", "{k}s", "MINID", "x", "9-1", "a", "b"},
		{"XADD", "{k}s", "MINID", "-", "9-1", "a", "b"}, {"XADD", "{k}s", "MAXLEN", "~", "9-1", "a", "b"}, {"XADD", "{k}s", "MAXLEN", "~", "1", "LIMIT", "0", "9-1", "a", "b"},
		{"XADD", "{k}s", "BOGUS", "9-2", "a", "b"}, {"XRANGE", "{k}s", "-", "+"}},
	// XRANGE, XREVRANGE: bounds, exclusive bounds, COUNT
	{{"XADD", "{k}s", "1-1", "a", "1"}, {"XADD", "{k}s", "1-2", "a", "2"}, {"XADD", "{k}s", "2-0", "a", "3"}, {"XADD", "{k}s", "3-5", "a", "4", "b", "5"},
		{"XRANGE", "{k}s", "-", "+"}, {"XRANGE", "{k}s", "1", "1"}, {"XRANGE", "{k}s", "1-2", "3"}, {"XRANGE", "{k}s", "(1-1", "+"},
		{"XRANGE", "{k}s", "-", "(3-5"}, {"XRANGE", "{k}s", "(1", "(3"}, {"XRANGE", "{k}s", "3", "1"}, {"XRANGE", "{k}s", "-", "+", "COUNT", "2"},
		{"XRANGE", "{k}s", "-", "+", "COUNT", "0"}, {"XRANGE", "{k}s", "-", "+", "COUNT", "-1"}, {"XRANGE", "{k}s", "-", "+", "count", "1", "COUNT", "3"},
		{"XRANGE", "{k}s", "-", "+", "COUNT"}, {"XRANGE", "{k}s", "-", "+", "COUNT", "x"}, {"XRANGE", "{k}s", "-", "+", "LIMIT", "1"},
		{"XRANGE", "{k}s", "(-", "+"}, {"XRANGE", "{k}s", "-", "(+"}, {"XRANGE", "{k}s", "(", "+"}, {"XRANGE", "{k}s", "x", "+"},
		{"XRANGE", "{k}s", "(18446744073709551615-18446744073709551615", "+"}, {"XRANGE", "{k}s", "-", "(0-0"}, {"XRANGE", "{k}s", "(0-0", "+"},
		{"XRANGE", "{k}s", "18446744073709551615", "+"}, {"XRANGE", "{k}none", "-", "+"}, {"XRANGE", "{k}none", "-", "+", "COUNT", "0"},
		{"XRANGE", "{k}none", "x", "+"}, {"XRANGE", "{k}s", "-"},
		{"XREVRANGE", "{k}s", "+", "-"}, {"XREVRANGE", "{k}s", "+", "-", "COUNT", "2"}, {"XREVRANGE", "{k}s", "(3-5", "(1-1"},
		{"XREVRANGE", "{k}s", "2", "1"}, {"XREVRANGE", "{k}s", "-", "+"}, {"XREVRANGE", "{k}s", "+", "-", "COUNT", "0"}, {"XREVRANGE", "{k}none", "+", "-"}},
	// XDEL, XLEN, the first id and the highest deleted one
	{{"XADD", "{k}s", "1-1", "a", "1"}, {"XADD", "{k}s", "2-1", "a", "2"}, {"XADD", "{k}s", "3-1", "a", "3"},
		{"XDEL", "{k}s", "1-1", "1-1", "9-9"}, {"XLEN", "{k}s"}, {"XINFO", "STREAM", "{k}s"}, {"XDEL", "{k}s", "3-1"},
		{"XINFO", "STREAM", "{k}s"}, {"XDEL", "{k}s", "2-1"}, {"XLEN", "{k}s"}, {"EXISTS", "{k}s"}, {"XINFO", "STREAM", "{k}s"},
		{"XDEL", "{k}s", "bad"}, {"XDEL", "{k}none", "bad"}, {"XDEL", "{k}none", "1-1"}, {"XDEL", "{k}s", "1-1", "-"},
		{"XADD", "{k}s", "2-1", "a", "b"}, {"XADD", "{k}s", "4-1", "a", "b"}, {"XDEL", "{k}s"}, {"XLEN", "{k}none"}, {"XLEN", "{k}s", "x"}},
	// XTRIM
	{{"XADD", "{k}s", "1-1", "a", "1"}, {"XADD", "{k}s", "2-1", "a", "2"}, {"XADD", "{k}s", "3-1", "a", "3"}, {"XADD", "{k}s", "4-1", "a", "4"},
		{"XTRIM", "{k}s", "MAXLEN", "3"}, {"XTRIM", "{k}s", "MAXLEN", "~", "1"}, {"XTRIM", "{k}s", "MINID", "3"}, {"XRANGE", "{k}s", "-", "+"},
		{"XTRIM", "{k}s", "MINID", "=", "3-1"}, {"XTRIM", "{k}s", "MAXLEN", "~", "0", "LIMIT", "0"}, {"XTRIM", "{k}s", "MAXLEN", "0"},
		{"XINFO", "STREAM", "{k}s"}, {"XTRIM", "{k}none", "MAXLEN", "1"}, {"XTRIM", "{k}none", "MAXLEN", "x"}, {"XTRIM", "{k}s", "foo"},
		{"XTRIM", "{k}s"}, {"XTRIM", "{k}s", "LIMIT", "1"}, {"XTRIM", "{k}s", "MAXLEN", "1", "LIMIT", "1"}, {"XTRIM", "{k}s", "MAXLEN", "1", "x"},
		{"XTRIM", "{k}s", "MAXLEN", "1", "MINID", "1"}, {"XTRIM", "{k}s", "MAXLEN", "-1"}, {"XTRIM", "{k}s", "MINID", "(1"}},
	// XSETID
	{{"XADD", "{k}s", "5-1", "a", "1"}, {"XADD", "{k}s", "6-1", "a", "1"}, {"XSETID", "{k}s", "7-1"}, {"XINFO", "STREAM", "{k}s"},
		{"XSETID", "{k}s", "6-0"}, {"XSETID", "{k}s", "6-1"}, {"XADD", "{k}s", "6-2", "a", "1"}, {"XSETID", "{k}s", "9", "ENTRIESADDED", "1"},
		{"XSETID", "{k}s", "9", "ENTRIESADDED", "5", "MAXDELETEDID", "8-1"}, {"XINFO", "STREAM", "{k}s"}, {"XSETID", "{k}s", "8-2"},
		{"XSETID", "{k}s", "9", "MAXDELETEDID", "10"}, {"XSETID", "{k}s", "9", "ENTRIESADDED", "-1"}, {"XSETID", "{k}s", "9", "ENTRIESADDED", "x"},
		{"XSETID", "{k}s", "9", "ENTRIESADDED"}, {"XSETID", "{k}s", "9", "BOGUS", "1"}, {"XSETID", "{k}s", "x"}, {"XSETID", "{k}none", "1"},
		{"XSETID", "{k}none", "x"}, {"XSETID", "{k}s", "-"}, {"XSETID", "{k}s"}, {"XADD", "{k}s", "9-*", "a", "b"}},
	// XREAD without blocking
	{{"XADD", "{k}a", "1-1", "a", "1"}, {"XADD", "{k}a", "2-1", "a", "2"}, {"XADD", "{k}b", "1-5", "b", "1"},
		{"XREAD", "STREAMS", "{k}a", "0"}, {"XREAD", "COUNT", "1", "STREAMS", "{k}a", "{k}b", "0", "0"}, {"XREAD", "STREAMS", "{k}a", "{k}b", "1-1", "1-5"},
		{"XREAD", "STREAMS", "{k}a", "{k}none", "{k}b", "1", "0", "$"}, {"XREAD", "STREAMS", "{k}a", "$"}, {"XREAD", "STREAMS", "{k}a", "2-1"},
		{"XREAD", "COUNT", "0", "STREAMS", "{k}a", "0-0"}, {"XREAD", "COUNT", "-5", "STREAMS", "{k}a", "0-0"}, {"XREAD", "BLOCK", "0", "COUNT", "1", "STREAMS", "{k}a", "0"},
		{"XREAD", "STREAMS", "{k}a", "18446744073709551615-18446744073709551615"}, {"XREAD", "STREAMS", "{k}a"}, {"XREAD", "STREAMS", "{k}a", "{k}b", "0"},
		{"XREAD", "STREAMS", "{k}a", ">"}, {"XREAD", "STREAMS", "{k}a", "x"}, {"XREAD", "STREAMS", "{k}a", "-"}, {"XREAD", "STREAMS", "{k}a", "+"},
		{"XREAD", "COUNT", "x", "STREAMS", "{k}a", "0"}, {"XREAD", "BLOCK", "x", "STREAMS", "{k}a", "0"}, {"XREAD", "BLOCK", "-1", "STREAMS", "{k}a", "0"},
		{"XREAD", "GROUP", "g", "c", "STREAMS", "{k}a", "0"}, {"XREAD", "NOACK", "STREAMS", "{k}a", "0"}, {"XREAD", "COUNT", "1", "{k}a", "0"},
		{"XREAD", "BOGUS", "STREAMS", "{k}a", "0"}, {"XREAD", "COUNT", "1", "BLOCK"}, {"SET", "{k}str", "v"}, {"XREAD", "STREAMS", "{k}str", "0"},
		{"XREAD", "STREAMS", "{k}a", "{k}str", "0", "0"}},
	// XINFO
	{{"XINFO", "STREAM", "{k}none"}, {"XADD", "{k}s", "1-1", "a", "1", "b", "2"}, {"XADD", "{k}s", "2-2", "c", "3"}, {"XINFO", "STREAM", "{k}s"},
		{"XINFO", "STREAM", "{k}s", "FULL"}, {"XINFO", "STREAM", "{k}s", "FULL", "COUNT", "1"}, {"XINFO", "STREAM", "{k}s", "full", "count", "0"},
		{"XINFO", "STREAM", "{k}s", "FULL", "COUNT", "-1"}, {"XINFO", "STREAM", "{k}s", "FULL", "COUNT", "x"}, {"XINFO", "STREAM", "{k}s", "FULL", "LIMIT", "1"},
		{"XINFO", "STREAM", "{k}s", "FULL", "COUNT"}, {"XINFO", "STREAM", "{k}s", "BOGUS"}, {"XINFO", "STREAM"}, {"XINFO", "BOGUS", "{k}s"},
		{"XINFO"}, {"XINFO", "HELP"}, {"XINFO", "help", "x"}, {"xinfo", "sTream", "{k}s", "x"}, {"XINFO", "STREAM", "{k}none", "FULL"}, {"SET", "{k}str", "v"}, {"XINFO", "STREAM", "{k}str"}},
	// wrong kinds, both ways; TYPE, OBJECT ENCODING
	{{"SET", "{k}str", "v"}, {"HSET", "{k}h", "a", "1"}, {"XADD", "{k}s", "1-1", "a", "b"}, {"XADD", "{k}str", "1-1", "a", "b"},
		{"XADD", "{k}h", "1-1", "a", "b"}, {"XLEN", "{k}str"}, {"XRANGE", "{k}h", "-", "+"}, {"XREVRANGE", "{k}str", "+", "-"},
		{"XDEL", "{k}str", "1-1"}, {"XDEL", "{k}str", "bad"}, {"XTRIM", "{k}str", "MAXLEN", "1"}, {"XSETID", "{k}str", "5"},
		{"GET", "{k}s"}, {"HGET", "{k}s", "a"}, {"LPUSH", "{k}s", "x"}, {"SADD", "{k}s", "x"}, {"ZADD", "{k}s", "1", "x"}, {"INCR", "{k}s"},
		{"TYPE", "{k}s"}, {"OBJECT", "ENCODING", "{k}s"}, {"SET", "{k}s", "now a string"}, {"TYPE", "{k}s"}},
	// the keyspace's commands on a stream
	{{"XADD", "{k}s", "1-1", "a", "b"}, {"EXPIRE", "{k}s", "100"}, {"TTL", "{k}s"}, {"XADD", "{k}s", "2-1", "c", "d"}, {"TTL", "{k}s"},
		{"XDEL", "{k}s", "1-1"}, {"TTL", "{k}s"}, {"PERSIST", "{k}s"}, {"RENAME", "{k}s", "{k}g"}, {"XRANGE", "{k}g", "-", "+"}, {"EXISTS", "{k}s"},
		{"COPY", "{k}g", "{k}c"}, {"XADD", "{k}c", "3-1", "e", "f"}, {"XRANGE", "{k}g", "-", "+"}, {"XRANGE", "{k}c", "-", "+"},
		{"XINFO", "STREAM", "{k}c"}, {"COPY", "{k}c", "{k}g", "REPLACE"}, {"XINFO", "STREAM", "{k}g"}, {"DEL", "{k}g", "{k}c"},
		{"EXISTS", "{k}g", "{k}c"}, {"XADD", "{k}x", "1-1", "a", "b"}, {"PEXPIREAT", "{k}x", "1"}, {"EXISTS", "{k}x"}, {"XLEN", "{k}x"},
		{"XADD", "{k}x", "1-1", "a", "b"}, {"XRANGE", "{k}x", "-", "+"}, {"XADD", "{k}s2", "1-1", "a", "b"}, {"KEYS", "{k}s*"}},
	// streams in MULTI and scripts
	{{"XADD", "{k}s", "1-1", "a", "b"}, {"MULTI"}, {"XADD", "{k}s", "2-1", "c", "d"}, {"XLEN", "{k}s"}, {"XRANGE", "{k}s", "-", "+"},
		{"XADD", "{k}s", "1-1", "x", "y"}, {"XREAD", "BLOCK", "100", "STREAMS", "{k}s", "$"}, {"XREAD", "STREAMS", "{k}s", "1-1"}, {"XDEL", "{k}s", "1-1"},
		{"XINFO", "STREAM", "{k}s"}, {"EXEC"},
		{"EVAL", "redis.call('XADD', KEYS[1], '3-1', 'e', 'f'); return redis.call('XRANGE', KEYS[1], '-', '+')", "1", "{k}s"},
		{"EVAL", "return redis.call('XLEN', KEYS[1])", "1", "{k}s"},
		{"EVAL", "return redis.call('XREAD', 'BLOCK', 0, 'STREAMS', KEYS[1], '$')", "1", "{k}s"},
		{"EVAL", "return redis.call('XREAD', 'STREAMS', KEYS[1], '2')", "1", "{k}s"},
		{"EVAL", "redis.call('XTRIM', KEYS[1], 'MAXLEN', 1); return redis.call('XINFO', 'STREAM', KEYS[1])", "1", "{k}s"},
		{"EVAL", "return redis.pcall('XADD', KEYS[1], '1-1', 'a', 'b')", "1", "{k}s"},
		{"EVAL", "redis.call('XADD', KEYS[1], '5-1', 'a', 'b'); redis.call('XSETID', KEYS[1], '9-9'); return redis.call('XINFO', 'STREAM', KEYS[1], 'FULL')", "1", "{k}n"},
		{"XRANGE", "{k}s", "-", "+"}, {"XINFO", "STREAM", "{k}n"}},
	// a stream of many entries: nodes of 100, "~" trims whole ones
	{{"EVAL", "for i = 1, 1050 do redis.call('XADD', KEYS[1], i .. '-1', 'f', 'v') end return redis.call('XLEN', KEYS[1])", "1", "{k}big"},
		{"XTRIM", "{k}big", "MAXLEN", "~", "900"}, {"XTRIM", "{k}big", "MAXLEN", "~", "840"}, {"XLEN", "{k}big"},
		{"XTRIM", "{k}big", "MINID", "~", "455"}, {"XRANGE", "{k}big", "-", "+", "COUNT", "1"}, {"XTRIM", "{k}big", "MAXLEN", "~", "0", "LIMIT", "150"},
		{"XLEN", "{k}big"}, {"XTRIM", "{k}big", "MINID", "777"}, {"XLEN", "{k}big"}, {"XADD", "{k}big", "MAXLEN", "~", "10", "2000-1", "f", "v"},
		{"XLEN", "{k}big"}, {"XDEL", "{k}big", "777-1", "778-1", "900-1"}, {"XREVRANGE", "{k}big", "+", "-", "COUNT", "2"},
		{"XRANGE", "{k}big", "(900", "901", "COUNT", "5"}, {"XTRIM", "{k}big", "MAXLEN", strings.Repeat("9", 20)}},
}

func TestStreamsAgainstRedis(t *testing.T) { collAgainstRedis(t, "stream", streamStreams) }
