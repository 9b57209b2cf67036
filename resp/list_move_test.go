package resp

import "testing"

// listMoveStreams are command streams of LMOVE, RPOPLPUSH, LMPOP, their
// blocking forms, LPOS, LSET and LINSERT whose replies must be Redis
// 7.0's, byte for byte ("{k}" is the stream's own key prefix): every
// argument's refusal in Redis's order (syntax before the key, the key
// before LSET's index, BLMPOP's timeout after its keys), the edges of
// counts, ranks and indexes (the lowest and highest 64-bit integers),
// wrong kinds on either side of a move, a list moved onto itself,
// lifetimes kept, MULTI (where the blocking forms answer at once),
// scripts (which may not call them) and another keyspace. The blocking
// forms wait here only on empty keys, for short timeouts that both
// servers wait out.
var listMoveStreams = [][][]string{
	// LMOVE, RPOPLPUSH: sides, a list moved onto itself, the last element
	{{"RPUSH", "{k}s", "a", "b", "c", "d"}, {"LMOVE", "{k}s", "{k}d", "LEFT", "RIGHT"}, {"LMOVE", "{k}s", "{k}d", "RIGHT", "LEFT"},
		{"LMOVE", "{k}s", "{k}d", "left", "left"}, {"LRANGE", "{k}d", "0", "-1"}, {"LMOVE", "{k}s", "{k}d", "Right", "rIGHT"},
		{"EXISTS", "{k}s"}, {"LRANGE", "{k}d", "0", "-1"}, {"LMOVE", "{k}s", "{k}d", "LEFT", "LEFT"}, {"RPOPLPUSH", "{k}none", "{k}d"},
		{"EXISTS", "{k}none"}, {"RPOPLPUSH", "{k}d", "{k}d"}, {"LRANGE", "{k}d", "0", "-1"}, {"LMOVE", "{k}d", "{k}d", "LEFT", "RIGHT"},
		{"LRANGE", "{k}d", "0", "-1"}, {"LMOVE", "{k}d", "{k}d", "LEFT", "LEFT"}, {"LMOVE", "{k}d", "{k}d", "RIGHT", "RIGHT"},
		{"LRANGE", "{k}d", "0", "-1"}, {"RPUSH", "{k}one", "x"}, {"LMOVE", "{k}one", "{k}one", "LEFT", "RIGHT"}, {"LRANGE", "{k}one", "0", "-1"},
		{"RPOPLPUSH", "{k}one", "{k}two"}, {"EXISTS", "{k}one"}, {"LRANGE", "{k}two", "0", "-1"}, {"RPUSH", "{k}b", "", "\x00\xff\r\n"},
		{"RPOPLPUSH", "{k}b", "{k}c"}, {"LMOVE", "{k}b", "{k}c", "LEFT", "RIGHT"}, {"LRANGE", "{k}c", "0", "-1"},
		{"LMOVE", "{k}d", "{k}e", "UP", "LEFT"}, {"LMOVE", "{k}d", "{k}e", "LEFT", "DOWN"}, {"LMOVE", "{k}none", "{k}e", "up", "left"},
		{"LMOVE", "{k}d", "{k}e", "LEFT"}, {"LMOVE", "{k}d", "{k}e", "LEFT", "LEFT", "x"}, {"RPOPLPUSH", "{k}d"},
		{"RPOPLPUSH", "{k}d", "{k}e", "x"}, {"LMOVE", "{k}d", "{k}e", "", "LEFT"}},
	// wrong kinds, on either side and in every command
	{{"SET", "{k}str", "v"}, {"RPUSH", "{k}l", "a", "b"}, {"LMOVE", "{k}str", "{k}l", "LEFT", "LEFT"}, {"LMOVE", "{k}l", "{k}str", "LEFT", "LEFT"},
		{"LRANGE", "{k}l", "0", "-1"}, {"GET", "{k}str"}, {"LMOVE", "{k}none", "{k}str", "LEFT", "LEFT"}, {"RPOPLPUSH", "{k}str", "{k}str"},
		{"RPOPLPUSH", "{k}l", "{k}str"}, {"BLMOVE", "{k}str", "{k}l", "LEFT", "LEFT", "0"}, {"BLMOVE", "{k}l", "{k}str", "LEFT", "LEFT", "0"},
		{"BRPOPLPUSH", "{k}str", "{k}l", "0"}, {"BLMOVE", "{k}none", "{k}str", "LEFT", "LEFT", "0.01"}, {"BLMPOP", "0", "1", "{k}str", "LEFT"},
		{"BLMPOP", "0", "2", "{k}none", "{k}str", "LEFT"}, {"LMPOP", "2", "{k}none", "{k}str", "LEFT"}, {"LMPOP", "2", "{k}l", "{k}str", "LEFT"},
		{"LMPOP", "2", "{k}str", "{k}l", "RIGHT"}, {"LPOS", "{k}str", "a"}, {"LPOS", "{k}str", "a", "RANK", "0"}, {"LSET", "{k}str", "0", "x"},
		{"LSET", "{k}str", "x", "x"}, {"LINSERT", "{k}str", "BEFORE", "a", "b"}, {"LINSERT", "{k}str", "middle", "a", "b"},
		{"GET", "{k}str"}, {"LRANGE", "{k}l", "0", "-1"}},
	// lifetimes: each list keeps its own, a new destination has none
	{{"RPUSH", "{k}s", "a", "b"}, {"EXPIRE", "{k}s", "100"}, {"RPUSH", "{k}d", "x"}, {"EXPIRE", "{k}d", "200"},
		{"LMOVE", "{k}s", "{k}d", "LEFT", "LEFT"}, {"TTL", "{k}s"}, {"TTL", "{k}d"}, {"LMOVE", "{k}s", "{k}n", "LEFT", "LEFT"}, {"TTL", "{k}n"},
		{"EXISTS", "{k}s"}, {"RPUSH", "{k}r", "a", "b"}, {"PEXPIRE", "{k}r", "100000"}, {"LMOVE", "{k}r", "{k}r", "LEFT", "RIGHT"},
		{"TTL", "{k}r"}, {"LSET", "{k}r", "0", "z"}, {"TTL", "{k}r"}, {"LINSERT", "{k}r", "BEFORE", "z", "y"}, {"TTL", "{k}r"},
		{"LMPOP", "1", "{k}r", "LEFT"}, {"TTL", "{k}r"}, {"RPUSH", "{k}x", "a"}, {"PEXPIREAT", "{k}x", "1"}, {"LMOVE", "{k}x", "{k}y", "LEFT", "LEFT"},
		{"EXISTS", "{k}x", "{k}y"}, {"LSET", "{k}x", "0", "a"}, {"LINSERT", "{k}x", "BEFORE", "a", "b"}},
	// LMPOP: sides, counts, numkeys, and every refusal
	{{"RPUSH", "{k}a", "1", "2", "3", "4", "5"}, {"LMPOP", "1", "{k}a", "LEFT"}, {"LMPOP", "1", "{k}a", "RIGHT", "COUNT", "2"},
		{"LMPOP", "2", "{k}none", "{k}a", "left", "count", "10"}, {"EXISTS", "{k}a"}, {"LMPOP", "2", "{k}none", "{k}a", "LEFT"},
		{"RPUSH", "{k}a", "x", "y"}, {"LMPOP", "2", "{k}a", "{k}a", "RIGHT", "COUNT", "9223372036854775807"},
		{"LMPOP", "0", "{k}a", "LEFT"}, {"LMPOP", "-1", "{k}a", "LEFT"}, {"LMPOP", "x", "{k}a", "LEFT"}, {"LMPOP", "", "{k}a", "LEFT"},
		{"LMPOP", "2", "{k}a", "LEFT"}, {"LMPOP", "3", "{k}a", "{k}b", "LEFT"}, {"LMPOP", "1", "{k}a", "MIDDLE"},
		{"LMPOP", "2", "{k}a", "{k}b"}, {"LMPOP", "1", "{k}a", "LEFT", "COUNT", "0"}, {"LMPOP", "1", "{k}a", "LEFT", "COUNT", "-1"},
		{"LMPOP", "1", "{k}a", "LEFT", "COUNT", "x"}, {"LMPOP", "1", "{k}a", "LEFT", "COUNT"}, {"LMPOP", "1", "{k}a", "LEFT", "COUNT", "1", "COUNT", "2"},
		{"LMPOP", "1", "{k}a", "LEFT", "foo"}, {"LMPOP", "1", "{k}a"}, {"LMPOP", "4611686018427387904", "{k}a", "LEFT"},
		{"LMPOP", "1", "{k}a", "LEFT", "COUNT", "1.5"}, {"LMPOP", "01", "{k}a", "LEFT"}, {"LMPOP", "1", "{k}a", "LEFT", "COUNT", "9223372036854775808"}},
	// BLMPOP: the timeout read after the rest, short waits, counts
	{{"RPUSH", "{k}b", "x", "y", "z"}, {"BLMPOP", "0", "1", "{k}b", "LEFT", "COUNT", "2"}, {"BLMPOP", "0", "2", "{k}n", "{k}b", "RIGHT", "COUNT", "5"},
		{"EXISTS", "{k}b"}, {"BLMPOP", "0.01", "1", "{k}b", "LEFT"}, {"BLMPOP", "0.02", "2", "{k}n1", "{k}n2", "RIGHT", "COUNT", "2"},
		{"BLMPOP", "x", "1", "{k}b", "LEFT"}, {"BLMPOP", "x", "0", "{k}b", "LEFT"}, {"BLMPOP", "x", "1", "{k}b", "MIDDLE"},
		{"BLMPOP", "-1", "1", "{k}b", "LEFT"}, {"BLMPOP", "nan", "1", "{k}b", "LEFT", "COUNT", "0"}, {"BLMPOP", "0", "1", "{k}b", "LEFT", "COUNT", "0"},
		{"BLMPOP", "0", "1", "{k}b"}, {"BLMPOP", "0", "2", "{k}b", "LEFT"}, {"BLMPOP", "0.01", "1", "{k}b", "right"}},
	// BLMOVE, BRPOPLPUSH: at once when the source holds a list, short waits, refusals
	{{"RPUSH", "{k}s", "a", "b"}, {"BLMOVE", "{k}s", "{k}d", "RIGHT", "LEFT", "0"}, {"BRPOPLPUSH", "{k}s", "{k}d", "0"},
		{"EXISTS", "{k}s"}, {"BLMOVE", "{k}s", "{k}d", "LEFT", "LEFT", "0.01"}, {"BRPOPLPUSH", "{k}s", "{k}d", "0.01"},
		{"BLMOVE", "{k}s", "{k}d", "UP", "LEFT", "x"}, {"BLMOVE", "{k}s", "{k}d", "LEFT", "LEFT", "x"}, {"BLMOVE", "{k}s", "{k}d", "LEFT", "LEFT", "-1"},
		{"BRPOPLPUSH", "{k}s", "{k}d", "nan"}, {"BRPOPLPUSH", "{k}s", "{k}d", "inf"}, {"BRPOPLPUSH", "{k}s", "{k}d"},
		{"BLMOVE", "{k}s", "{k}d", "LEFT", "LEFT"}, {"BLMOVE", "{k}d", "{k}d", "LEFT", "RIGHT", "0"}, {"LRANGE", "{k}d", "0", "-1"},
		{"BRPOPLPUSH", "{k}d", "{k}d", "1"}, {"LRANGE", "{k}d", "0", "-1"}},
	// MULTI: the blocking forms answer at once; refusals at EXEC, in place
	{{"RPUSH", "{k}s", "a"}, {"MULTI"}, {"BLMOVE", "{k}s", "{k}d", "LEFT", "LEFT", "0"}, {"BLMOVE", "{k}s", "{k}d", "LEFT", "LEFT", "0"},
		{"BRPOPLPUSH", "{k}s", "{k}d", "0"}, {"BLMPOP", "0", "1", "{k}s", "LEFT"}, {"RPUSH", "{k}d", "b", "c"},
		{"BLMPOP", "0", "1", "{k}d", "LEFT", "COUNT", "2"}, {"LMOVE", "{k}d", "{k}d", "LEFT", "RIGHT"}, {"LPOS", "{k}d", "c"},
		{"LPOS", "{k}d", "c", "RANK", "0"}, {"LSET", "{k}d", "0", "z"}, {"LSET", "{k}none", "0", "z"}, {"LSET", "{k}d", "x", "z"},
		{"LSET", "{k}none", "x", "z"}, {"LINSERT", "{k}d", "BEFORE", "z", "y"}, {"LINSERT", "{k}d", "wrong", "z", "y"},
		{"BLMOVE", "{k}s", "{k}d", "UP", "LEFT", "0"}, {"BLMPOP", "x", "1", "{k}s", "LEFT"}, {"LMPOP", "0", "{k}s", "LEFT"},
		{"RPOPLPUSH", "{k}d", "{k}e"}, {"LRANGE", "{k}d", "0", "-1"}, {"LRANGE", "{k}e", "0", "-1"}, {"EXEC"},
		{"MULTI"}, {"LMOVE", "{k}d", "{k}d"}, {"EXEC"}, {"SET", "{k}str", "v"}, {"MULTI"}, {"LMOVE", "{k}e", "{k}str", "LEFT", "LEFT"},
		{"LSET", "{k}str", "x", "y"}, {"EXEC"}},
	// WATCH sees a move on either side
	{{"RPUSH", "{k}s", "a", "b"}, {"WATCH", "{k}d"}, {"RPOPLPUSH", "{k}s", "{k}d"}, {"MULTI"}, {"LLEN", "{k}d"}, {"EXEC"},
		{"WATCH", "{k}s"}, {"LMOVE", "{k}d", "{k}s", "LEFT", "LEFT"}, {"MULTI"}, {"LLEN", "{k}s"}, {"EXEC"}},
	// scripts may call the non-blocking forms, not the blocking ones
	{{"RPUSH", "{k}s", "a", "b", "c"},
		{"EVAL", "return redis.call('lmove', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')", "2", "{k}s", "{k}d"},
		{"EVAL", "return redis.call('rpoplpush', KEYS[1], KEYS[2])", "2", "{k}s", "{k}d"},
		{"EVAL", "return redis.call('lmpop', 2, KEYS[1], KEYS[2], 'LEFT', 'COUNT', 5)", "2", "{k}none", "{k}d"},
		{"EVAL", "return redis.call('lmpop', 1, KEYS[1], 'LEFT')", "1", "{k}none"},
		{"RPUSH", "{k}l", "a", "b", "a"},
		{"EVAL", "return redis.call('lpos', KEYS[1], 'a', 'COUNT', 0)", "1", "{k}l"},
		{"EVAL", "return redis.call('lset', KEYS[1], -1, 'z')", "1", "{k}l"},
		{"EVAL", "return redis.pcall('lset', KEYS[1], 5, 'z')", "1", "{k}l"},
		{"EVAL", "return redis.pcall('lset', KEYS[1], 0, 'z')", "1", "{k}none"},
		{"EVAL", "return redis.call('linsert', KEYS[1], 'AFTER', 'b', 'c')", "1", "{k}l"},
		{"EVAL", "return redis.call('lrange', KEYS[1], 0, -1)", "1", "{k}l"},
		{"EVAL", "return redis.call('blmove', KEYS[1], KEYS[2], 'LEFT', 'RIGHT', 0)", "2", "{k}l", "{k}d"},
		{"EVAL", "return redis.call('brpoplpush', KEYS[1], KEYS[2], 0)", "2", "{k}l", "{k}d"},
		{"EVAL", "return redis.call('blmpop', 0, 1, KEYS[1], 'LEFT')", "1", "{k}l"},
		{"EVAL", "return redis.pcall('lmove', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')", "2", "{k}l", "{k}l"},
		{"LRANGE", "{k}l", "0", "-1"}, {"LRANGE", "{k}d", "0", "-1"}},
	// LPOS: ranks, counts, maxlen, their refusals, and Redis's arithmetic at the edges
	{{"RPUSH", "{k}l", "a", "b", "c", "1", "2", "3", "c", "c"}, {"LPOS", "{k}l", "a"}, {"LPOS", "{k}l", "c"}, {"LPOS", "{k}l", "c", "RANK", "2"},
		{"LPOS", "{k}l", "c", "RANK", "-1"}, {"LPOS", "{k}l", "c", "RANK", "-3"}, {"LPOS", "{k}l", "c", "RANK", "4"}, {"LPOS", "{k}l", "c", "COUNT", "0"},
		{"LPOS", "{k}l", "c", "COUNT", "2"}, {"LPOS", "{k}l", "c", "RANK", "2", "COUNT", "2"}, {"LPOS", "{k}l", "c", "RANK", "-1", "COUNT", "0"},
		{"LPOS", "{k}l", "c", "MAXLEN", "1"}, {"LPOS", "{k}l", "c", "MAXLEN", "3"}, {"LPOS", "{k}l", "c", "COUNT", "0", "MAXLEN", "7"},
		{"LPOS", "{k}l", "c", "RANK", "-1", "MAXLEN", "2"}, {"LPOS", "{k}l", "c", "RANK", "-2", "MAXLEN", "1"}, {"LPOS", "{k}l", "x"},
		{"LPOS", "{k}l", "x", "COUNT", "0"}, {"LPOS", "{k}none", "x"}, {"LPOS", "{k}none", "x", "COUNT", "1"}, {"LPOS", "{k}l", "c", "RANK", "0"},
		{"LPOS", "{k}l", "c", "RANK", "x"}, {"LPOS", "{k}l", "c", "COUNT", "-1"}, {"LPOS", "{k}l", "c", "COUNT", "x"},
		{"LPOS", "{k}l", "c", "MAXLEN", "-1"}, {"LPOS", "{k}l", "c", "MAXLEN", "x"}, {"LPOS", "{k}l", "c", "RANK"}, {"LPOS", "{k}l", "c", "FOO", "1"},
		{"LPOS", "{k}l", "c", "RANK", "1", "RANK", "2"}, {"LPOS", "{k}none", "c", "RANK", "0"}, {"LPOS", "{k}l", "c", "RANK", "-9223372036854775808"},
		{"LPOS", "{k}l", "c", "RANK", "-9223372036854775808", "COUNT", "2"}, {"LPOS", "{k}l", "c", "RANK", "9223372036854775807"},
		{"LPOS", "{k}l", "c", "COUNT", "9223372036854775807"}, {"LPOS", "{k}l", "c", "MAXLEN", "9223372036854775807"}, {"LPOS", "{k}l", "1"},
		{"LPOS", "{k}l"}, {"LPOS", "{k}l", "c", "rank", "1", "count", "1", "maxlen", "0"}, {"LPOS", "{k}l", "c", "COUNT", "1.0"},
		{"LPOS", "{k}l", "c", "RANK", "9223372036854775808"}, {"LPOS", "{k}l", "c", "COUNT", "1", "RANK", "-2"}},
	// LSET: indexes at the edges, the key before the index
	{{"RPUSH", "{k}l", "a", "b", "c"}, {"LSET", "{k}l", "0", "x"}, {"LSET", "{k}l", "-1", "y"}, {"LSET", "{k}l", "3", "z"},
		{"LSET", "{k}l", "-4", "z"}, {"LSET", "{k}l", "x", "z"}, {"LSET", "{k}none", "0", "z"}, {"LSET", "{k}none", "x", "z"},
		{"LSET", "{k}l", "9223372036854775807", "z"}, {"LSET", "{k}l", "-9223372036854775808", "z"}, {"LRANGE", "{k}l", "0", "-1"},
		{"LSET", "{k}l", "1", ""}, {"LRANGE", "{k}l", "0", "-1"}, {"LSET", "{k}l", "1.0", "z"}, {"LSET", "{k}l", "1"},
		{"LSET", "{k}l", "-0", "w"}, {"LSET", "{k}l", "+1", "w"}, {"LSET", "{k}l", "", "w"}, {"LRANGE", "{k}l", "0", "-1"}, {"EXISTS", "{k}none"}},
	// LINSERT: before, after, the first pivot, no pivot, no key
	{{"RPUSH", "{k}l", "a", "b", "c", "b"}, {"LINSERT", "{k}l", "BEFORE", "b", "x"}, {"LINSERT", "{k}l", "AFTER", "b", "y"},
		{"LINSERT", "{k}l", "after", "c", "z"}, {"LINSERT", "{k}l", "before", "a", "w"}, {"LINSERT", "{k}l", "BEFORE", "nope", "q"},
		{"LINSERT", "{k}none", "BEFORE", "a", "b"}, {"EXISTS", "{k}none"}, {"LINSERT", "{k}l", "MIDDLE", "a", "b"},
		{"LINSERT", "{k}none", "MIDDLE", "a", "b"}, {"LRANGE", "{k}l", "0", "-1"}, {"LINSERT", "{k}l", "BEFORE", "", "q"},
		{"RPUSH", "{k}e", ""}, {"LINSERT", "{k}e", "AFTER", "", "q"}, {"LRANGE", "{k}e", "0", "-1"}, {"LINSERT", "{k}l", "BEFORE", "a"},
		{"LINSERT", "{k}l", "BEFOR", "a", "b"}},
	// another keyspace: a move's destination and LMPOP's keys are its own
	{{"SELECT", "1"}, {"RPUSH", "{k}s", "a", "b"}, {"LMOVE", "{k}s", "{k}d", "LEFT", "LEFT"}, {"LMPOP", "2", "{k}x", "{k}d", "LEFT"},
		{"RPOPLPUSH", "{k}s", "{k}d"}, {"SELECT", "0"}, {"EXISTS", "{k}s", "{k}d"}, {"LMPOP", "2", "{k}s", "{k}d", "LEFT"},
		{"SELECT", "1"}, {"EXISTS", "{k}s", "{k}d"}, {"LRANGE", "{k}d", "0", "-1"}, {"DEL", "{k}d"}, {"SELECT", "0"}},
}

// TestListMovesAgainstRedis: listMoveStreams, in RESP2 and RESP3,
// answered as redis-server answers them, through a follower.
func TestListMovesAgainstRedis(t *testing.T) { againstRedis(t, "listmove", listMoveStreams) }
