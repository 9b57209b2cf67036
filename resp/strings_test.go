package resp

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// stringStreams are command streams of the string and keyspace commands
// whose replies must be Redis 7's, byte for byte: "{k}" is the stream's
// own key prefix. Lifetimes are whole seconds far from a rounding edge, or
// absolute times, so that both servers answer alike.
var stringStreams = [][][]string{
	// GETSET
	{{"GETSET", "{k}a", "1"}, {"GETSET", "{k}a", "2"}, {"GET", "{k}a"}, {"SET", "{k}t", "x", "EX", "100"},
		{"GETSET", "{k}t", "y"}, {"TTL", "{k}t"}, {"GETSET", "{k}a"}, {"GETSET", "{k}a", "1", "2"},
		{"GETSET", "{k}e", ""}, {"GETSET", "{k}e", "\x00\xff\r\n"}, {"GET", "{k}e"}},
	// SETEX, PSETEX
	{{"SETEX", "{k}a", "100", "v"}, {"TTL", "{k}a"}, {"GET", "{k}a"}, {"SETEX", "{k}a", "0", "v"}, {"SETEX", "{k}a", "-1", "v"},
		{"SETEX", "{k}a", "x", "v"}, {"SETEX", "{k}a", "1.5", "v"}, {"SETEX", "{k}a", "9223372036854775808", "v"},
		{"SETEX", "{k}a", "-9223372036854775808", "v"}, {"SETEX", "{k}a", "100"}, {"SETEX", "{k}a", "100", "v", "NX"},
		{"GET", "{k}a"}, {"PSETEX", "{k}p", "100000", "w"}, {"TTL", "{k}p"}, {"PSETEX", "{k}p", "0", "w"},
		{"PSETEX", "{k}p", "-5", "w"}, {"PSETEX", "{k}p", " 5", "w"}, {"PSETEX", "{k}p", "+5", "w"}, {"SETEX", "{k}b", "100", ""},
		{"STRLEN", "{k}b"}, {"SETEX", "{k}a", "200", "new"}, {"TTL", "{k}a"}, {"GET", "{k}a"}},
	// GETEX
	{{"GETEX", "{k}none"}, {"GETEX", "{k}none", "EX", "0"}, {"GETEX", "{k}none", "EX", "x"}, {"GETEX", "{k}none", "FOO"},
		{"SET", "{k}a", "v"}, {"GETEX", "{k}a"}, {"TTL", "{k}a"}, {"GETEX", "{k}a", "EX", "100"}, {"TTL", "{k}a"},
		{"GETEX", "{k}a", "PERSIST"}, {"TTL", "{k}a"}, {"GETEX", "{k}a", "PERSIST"}, {"GETEX", "{k}a", "PX", "200000"}, {"TTL", "{k}a"},
		{"GETEX", "{k}a", "EX", "0"}, {"GETEX", "{k}a", "EX", "-1"}, {"GETEX", "{k}a", "PX", "x"}, {"TTL", "{k}a"},
		{"GETEX", "{k}a", "EX", "1", "PX", "1"}, {"GETEX", "{k}a", "EX", "1", "PERSIST"}, {"GETEX", "{k}a", "PERSIST", "PERSIST"},
		{"GETEX", "{k}a", "EX"}, {"GETEX", "{k}a", "EX", "x", "EX", "400"}, {"TTL", "{k}a"}, {"GETEX", "{k}a", "EX", "1", "EX", "x"},
		{"GETEX", "{k}a", "PX", "1", "PX", "500000"}, {"TTL", "{k}a"}, {"GETEX", "{k}a", "PERSIST", "EX", "1"}, {"GETEX", "{k}a", "ex", "300"}, {"TTL", "{k}a"},
		{"GETEX", "{k}a", "EXAT", "4102444800"}, {"TTL", "{k}a"}, {"GETEX", "{k}a", "PXAT", "4102444800000"},
		{"GETEX", "{k}a", "EXAT", "1"}, {"EXISTS", "{k}a"}, {"SET", "{k}b", "w"}, {"GETEX", "{k}b", "PXAT", "1"}, {"GET", "{k}b"},
		{"GETEX"}, {"SET", "{k}c", "\x00bin\xff"}, {"GETEX", "{k}c", "EX", "50"}, {"GETEX", "{k}c", "EXAT", "0"}, {"EXISTS", "{k}c"}},
	// MSET, MSETNX
	{{"MSET", "{k}a", "1", "{k}b", "2"}, {"MGET", "{k}a", "{k}b"}, {"MSET", "{k}a"}, {"MSET", "{k}a", "1", "{k}b"},
		{"MSET", "{k}a", "1", "{k}a", "3"}, {"GET", "{k}a"}, {"SET", "{k}t", "x", "EX", "100"}, {"MSET", "{k}t", "y"}, {"TTL", "{k}t"},
		{"MSETNX", "{k}n1", "1", "{k}n2", "2"}, {"MGET", "{k}n1", "{k}n2"}, {"MSETNX", "{k}n3", "3", "{k}n1", "x"},
		{"MGET", "{k}n1", "{k}n3"}, {"EXISTS", "{k}n3"}, {"MSETNX", "{k}n4", "1", "{k}n4", "2"}, {"GET", "{k}n4"},
		{"MSETNX", "{k}n5"}, {"MSETNX", "{k}n5", "1", "{k}n6"}, {"MSET", "{k}y", "e", "{k}z", ""}, {"MGET", "{k}y", "{k}z"},
		{"MSETNX", "{k}n7", "\x00\r\n"}, {"GET", "{k}n7"}},
	// APPEND, SETRANGE
	{{"APPEND", "{k}a", "ab"}, {"APPEND", "{k}a", "cd"}, {"GET", "{k}a"}, {"APPEND", "{k}a", ""}, {"APPEND", "{k}e", ""}, {"EXISTS", "{k}e"},
		{"APPEND", "{k}a"}, {"SET", "{k}t", "x", "EX", "100"}, {"APPEND", "{k}t", "\x00\xff"}, {"TTL", "{k}t"}, {"GET", "{k}t"},
		{"SETRANGE", "{k}s", "3", "ab"}, {"GET", "{k}s"}, {"SETRANGE", "{k}s", "0", "XYZW"}, {"GET", "{k}s"}, {"SETRANGE", "{k}s", "1", "\x00"},
		{"GET", "{k}s"}, {"SETRANGE", "{k}s", "10", ""}, {"STRLEN", "{k}s"}, {"SETRANGE", "{k}n", "10", ""}, {"EXISTS", "{k}n"},
		{"SETRANGE", "{k}n", "9223372036854775807", ""}, {"SETRANGE", "{k}s", "-1", "x"}, {"SETRANGE", "{k}s", "x", "x"},
		{"SETRANGE", "{k}s", "1.5", "x"}, {"SETRANGE", "{k}s", "9223372036854775808", "x"}, {"SETRANGE", "{k}s", "9223372036854775807", "x"},
		{"SETRANGE", "{k}s", "536870912", "x"}, {"SETRANGE", "{k}n", "536870911", "xy"}, {"EXISTS", "{k}n"}, {"GET", "{k}s"},
		{"SETRANGE", "{k}t", "5", "z"}, {"TTL", "{k}t"}, {"GET", "{k}t"}, {"SETRANGE", "{k}s", "1"}, {"SET", "{k}i", "100"},
		{"APPEND", "{k}i", "5"}, {"INCR", "{k}i"}, {"SETRANGE", "{k}i", "0", "9"}, {"GET", "{k}i"}},
	// INCRBYFLOAT
	{{"INCRBYFLOAT", "{k}f", "0.1"}, {"INCRBYFLOAT", "{k}f", "0.2"}, {"INCRBYFLOAT", "{k}f", "10.5"}, {"INCRBYFLOAT", "{k}f", "1e20"},
		{"INCRBYFLOAT", "{k}f", "-5"}, {"INCRBYFLOAT", "{k}f", "-1e20"}, {"INCRBYFLOAT", "{k}f", "0x10"}, {"INCRBYFLOAT", "{k}f", "+3"},
		{"INCRBYFLOAT", "{k}f", ".5"}, {"INCRBYFLOAT", "{k}f", "5."}, {"INCRBYFLOAT", "{k}f", "3.0e2"}, {"INCRBYFLOAT", "{k}f", "0X1P-3"},
		{"INCRBYFLOAT", "{k}f", "1E-3"}, {"INCRBYFLOAT", "{k}f", "inf"}, {"INCRBYFLOAT", "{k}f", "-Infinity"}, {"INCRBYFLOAT", "{k}f", "nan"},
		{"INCRBYFLOAT", "{k}f", "1e5000"}, {"INCRBYFLOAT", "{k}f", "1e-5000"}, {"INCRBYFLOAT", "{k}f", " 1"}, {"INCRBYFLOAT", "{k}f", "1 "},
		{"INCRBYFLOAT", "{k}f", "1e"}, {"INCRBYFLOAT", "{k}f", ""}, {"INCRBYFLOAT", "{k}f", "0x"}, {"INCRBYFLOAT", "{k}f", "1_000"},
		{"INCRBYFLOAT", "{k}f", "0b1"}, {"INCRBYFLOAT", "{k}f", "1\x00junk"}, {"INCRBYFLOAT", "{k}f", "\x00"}, {"GET", "{k}f"},
		{"INCRBYFLOAT", "{k}f", "1e-20"}, {"INCRBYFLOAT", "{k}f"}, {"INCRBYFLOAT", "{k}f", "1", "2"},
		{"SET", "{k}z", "0"}, {"INCRBYFLOAT", "{k}z", "-0.0"}, {"INCRBYFLOAT", "{k}z", "-1e-30"},
		{"SET", "{k}g", "1e300"}, {"INCRBYFLOAT", "{k}g", "1e300"}, {"SET", "{k}h", "1.7976931348623157e308"},
		{"INCRBYFLOAT", "{k}h", "1.7976931348623157e308"}, {"SET", "{k}b", "1e4932"}, {"INCRBYFLOAT", "{k}b", "1e4932"}, {"GET", "{k}b"},
		{"SET", "{k}w", "abc"}, {"INCRBYFLOAT", "{k}w", "1"}, {"SET", "{k}w", " 1"}, {"INCRBYFLOAT", "{k}w", "1"},
		{"SET", "{k}w", "inf"}, {"INCRBYFLOAT", "{k}w", "1"}, {"SET", "{k}w", "-inf"}, {"INCRBYFLOAT", "{k}w", "inf"},
		{"SET", "{k}m", "1.5", "EX", "100"}, {"INCRBYFLOAT", "{k}m", "1"}, {"TTL", "{k}m"},
		{"SET", "{k}p", "3.14159265358979323846264338327950288"}, {"INCRBYFLOAT", "{k}p", "0"},
		{"SET", "{k}q", "123456789012345678901234567890"}, {"INCRBYFLOAT", "{k}q", "0.5"}, {"INCRBYFLOAT", "{k}q", "-123456789012345678901234567890"}},
	// EXPIRETIME, PEXPIRETIME, TYPE, OBJECT ENCODING
	{{"EXPIRETIME", "{k}a"}, {"PEXPIRETIME", "{k}a"}, {"TYPE", "{k}a"}, {"OBJECT", "ENCODING", "{k}a"}, {"SET", "{k}a", "v"},
		{"EXPIRETIME", "{k}a"}, {"PEXPIRETIME", "{k}a"}, {"TYPE", "{k}a"}, {"EXPIREAT", "{k}a", "4102444800"}, {"EXPIRETIME", "{k}a"},
		{"SET", "{k}b", "v", "EXAT", "4102444801"}, {"EXPIRETIME", "{k}b"}, {"EXPIRETIME"}, {"EXPIRETIME", "{k}a", "x"}, {"TYPE"},
		{"PEXPIRETIME", "{k}a", "{k}b"}, {"OBJECT"}, {"OBJECT", "ENCODING"}, {"OBJECT", "ENCODING", "{k}a", "x"}, {"OBJECT", "FOO", "{k}a"},
		{"OBJECT", "FOO"}, {"OBJECT", "encoding", "{k}a"},
		{"SET", "{k}i", "123"}, {"OBJECT", "ENCODING", "{k}i"}, {"SET", "{k}i", "-9223372036854775808"}, {"OBJECT", "ENCODING", "{k}i"},
		{"SET", "{k}i", "9223372036854775808"}, {"OBJECT", "ENCODING", "{k}i"}, {"SET", "{k}i", "-0"}, {"OBJECT", "ENCODING", "{k}i"},
		{"SET", "{k}i", "007"}, {"OBJECT", "ENCODING", "{k}i"}, {"SET", "{k}i", "+1"}, {"OBJECT", "ENCODING", "{k}i"},
		{"SET", "{k}i", " 1"}, {"OBJECT", "ENCODING", "{k}i"}, {"SET", "{k}i", "0"}, {"OBJECT", "ENCODING", "{k}i"},
		{"SET", "{k}i", ""}, {"OBJECT", "ENCODING", "{k}i"}, {"INCR", "{k}n"}, {"OBJECT", "ENCODING", "{k}n"},
		{"SET", "{k}e", strings.Repeat("x", 44)}, {"OBJECT", "ENCODING", "{k}e"}, {"SET", "{k}e", strings.Repeat("x", 45)},
		{"OBJECT", "ENCODING", "{k}e"}, {"SET", "{k}e", strings.Repeat("1", 21)}, {"OBJECT", "ENCODING", "{k}e"},
		{"MULTI"}, {"TYPE", "{k}a"}, {"TYPE", "{k}none"}, {"EXPIRETIME", "{k}b"}, {"OBJECT", "ENCODING", "{k}i"}, {"OBJECT", "FOO"}, {"EXEC"},
		{"EVAL", "return {redis.call('type', KEYS[1]).ok, redis.call('expiretime', KEYS[1]), redis.call('object', 'encoding', KEYS[1])}", "1", "{k}b"}},
	// RENAME, RENAMENX, COPY
	{{"RENAME", "{k}none", "{k}b"}, {"RENAMENX", "{k}none", "{k}b"}, {"COPY", "{k}none", "{k}b"}, {"SET", "{k}a", "1", "EX", "100"},
		{"RENAME", "{k}a", "{k}b"}, {"EXISTS", "{k}a"}, {"GET", "{k}b"}, {"TTL", "{k}b"}, {"RENAME", "{k}b", "{k}b"}, {"RENAMENX", "{k}b", "{k}b"},
		{"RENAMENX", "{k}none", "{k}none"}, {"RENAME", "{k}none", "{k}none"}, {"SET", "{k}c", "2"}, {"RENAMENX", "{k}b", "{k}c"},
		{"MGET", "{k}b", "{k}c"}, {"RENAME", "{k}b", "{k}c"}, {"MGET", "{k}b", "{k}c"}, {"TTL", "{k}c"}, {"RENAMENX", "{k}c", "{k}d"},
		{"TTL", "{k}d"}, {"RENAME", "{k}d"}, {"RENAME", "{k}d", "{k}e", "x"}, {"RENAMENX", "{k}d"},
		{"COPY", "{k}d", "{k}e"}, {"MGET", "{k}d", "{k}e"}, {"TTL", "{k}e"}, {"COPY", "{k}d", "{k}e"}, {"SET", "{k}d", "3"},
		{"COPY", "{k}d", "{k}e"}, {"GET", "{k}e"}, {"COPY", "{k}d", "{k}e", "REPLACE"}, {"GET", "{k}e"}, {"TTL", "{k}e"},
		{"COPY", "{k}d", "{k}d"}, {"COPY", "{k}none", "{k}none"}, {"COPY", "{k}d", "{k}f", "DB", "0"}, {"GET", "{k}f"},
		{"COPY", "{k}d", "{k}g", "DB", "16"}, {"COPY", "{k}d", "{k}g", "DB", "-1"}, {"COPY", "{k}d", "{k}g", "DB", "x"},
		{"COPY", "{k}d", "{k}g", "DB", "4294967296"}, {"COPY", "{k}d", "{k}g", "DB"}, {"COPY", "{k}d", "{k}g", "FOO"},
		{"COPY", "{k}d", "{k}d", "FOO"}, {"COPY", "{k}d", "{k}f", "replace", "db", "0", "REPLACE"}, {"COPY", "{k}d"},
		{"SET", "{k}bin", "\x00\xff"}, {"RENAME", "{k}bin", "{k}bin2\x00"}, {"GET", "{k}bin2\x00"},
		{"MULTI"}, {"SET", "{k}m", "1"}, {"RENAME", "{k}m", "{k}n"}, {"COPY", "{k}n", "{k}o"}, {"RENAMENX", "{k}o", "{k}n"},
		{"RENAME", "{k}none", "{k}x"}, {"COPY", "{k}n", "{k}n"}, {"EXEC"}, {"MGET", "{k}m", "{k}n", "{k}o"}},
	// SET's options given again: the last value counts, as in Redis
	{{"SET", "{k}s", "v", "NX", "NX"}, {"SET", "{k}s", "v", "XX", "XX"}, {"SET", "{k}s", "v", "NX", "XX"}, {"SET", "{k}s", "v", "EX", "x", "EX", "100"},
		{"TTL", "{k}s"}, {"SET", "{k}s", "v", "EX", "5", "PX", "5"}, {"SET", "{k}s", "v", "KEEPTTL", "KEEPTTL"}, {"TTL", "{k}s"},
		{"SET", "{k}s", "v", "GET", "GET"}, {"SET", "{k}s", "v", "EX", "5", "EX", "x"}, {"SET", "{k}s", "v", "EX", "0", "EX", "200"},
		{"TTL", "{k}s"}, {"SET", "{k}s", "v", "EX", "x", "FOO"}, {"SET", "{k}s", "v", "PX", "1", "KEEPTTL"}, {"SET", "{k}s", "v", "KEEPTTL", "PX", "1"},
		{"SET", "{k}s", "v", "EX", "100", "NX", "EX", "300"}, {"SET", "{k}s", "w", "XX", "PX", "300000", "PX", "400000", "GET"}, {"TTL", "{k}s"}},
	// inside MULTI
	{{"MULTI"}, {"GETSET", "{k}a", "1"}, {"SETEX", "{k}b", "100", "2"}, {"PSETEX", "{k}c", "100000", "3"}, {"GETEX", "{k}a", "EX", "100"},
		{"GETEX", "{k}none", "EX", "0"}, {"GETEX", "{k}a", "EX", "0"}, {"MSET", "{k}d", "4", "{k}e", "5"}, {"GETEX", "{k}d", "PERSIST"},
		{"SETEX", "{k}f", "0", "x"}, {"MSET", "{k}g"},
		{"APPEND", "{k}a", "x"}, {"SETRANGE", "{k}b", "3", "y"}, {"INCRBYFLOAT", "{k}h", "1.5"}, {"INCRBYFLOAT", "{k}a", "1"},
		{"INCRBYFLOAT", "{k}h", "x"}, {"SETRANGE", "{k}b", "-1", "y"}, {"EXEC"}, {"MGET", "{k}a", "{k}b", "{k}c", "{k}d", "{k}e", "{k}f"}, {"TTL", "{k}a"}},
}

// TestStringsAgainstRedis sends stringStreams to redis-server and to a
// 3-node cluster's follower, in RESP2 and after HELLO 3, and compares
// every reply byte for byte.
func TestStringsAgainstRedis(t *testing.T) { againstRedis(t, "str", stringStreams) }

// againstRedis sends streams to redis-server and to a 3-node cluster's
// follower, each stream on fresh connections, in RESP2 and after HELLO 3,
// and compares every reply byte for byte (KEYS as a set: Redis answers in
// its hash table's order). "{k}" in a stream is its own key prefix, which
// begins with name.
func againstRedis(t *testing.T, name string, streams [][][]string) {
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	follower := (tc.rc.WaitLeader(5*time.Second) + 1) % 3
	for _, proto := range []int{2, 3} {
		for i, stream := range streams {
			rc, ic := dialRaw(t, redisAddr), dialRaw(t, tc.addrs[follower])
			if proto == 3 {
				for _, c := range []*rawConn{rc, ic} {
					c.send("HELLO 3\r\n")
					c.replies(1) // the servers' own
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
				if strings.EqualFold(args[0], "keys") {
					want, got = sortedArray(t, want), sortedArray(t, got)
				}
				if got != want && !sameRemaining(args[0], got, want) {
					t.Errorf("resp%d stream %d: %q:\n idemgate %q\n redis    %q", proto, i, args, got, want)
				}
			}
		}
	}
}

// sameRemaining: a TTL or PTTL reply of a key with a lifetime is counted
// from each server's own clock at the moment the command reached it, and
// redis-server rounds TTL to the nearest second: a loaded machine can let
// half a second pass between the two servers' answers. Such replies match
// within a second; -1 and -2 must match exactly.
func sameRemaining(cmd, got, want string) bool {
	slack := map[string]int64{"ttl": 1, "pttl": 1000}[strings.ToLower(cmd)]
	var g, w int64
	if slack == 0 || !strings.HasPrefix(got, ":") || !strings.HasPrefix(want, ":") {
		return false
	}
	if _, err := fmt.Sscanf(got, ":%d\r\n", &g); err != nil {
		return false
	}
	if _, err := fmt.Sscanf(want, ":%d\r\n", &w); err != nil {
		return false
	}
	return g >= 0 && w >= 0 && g-w <= slack && w-g <= slack
}

// globKeys and globPatterns: keys and KEYS patterns that exercise Redis's
// stringmatchlen, escapes, classes, ranges (reversed, of bytes past 0x7f,
// which C compares as signed), unclosed brackets and NUL bytes.
var (
	globKeys = []string{"hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "h?llo", "h[a]llo", "h\\llo", "a\\b", "a]b", "a-b",
		"\xff", "\x80x", "x\x00y", "x\x00", "[", "]", "^", "-", "!", "abc", "ABC", "a", "aa", "aaa", "\\", "*", "?", "a[b", "aXbXc",
		"\x7f", "b\xc3\xa9", "ab-"}
	globPatterns = []string{"*", "h?llo", "h*llo", "h[ae]llo", "h[^e]llo", "h[a-b]llo", "h[b-a]llo", "h\\*llo", "h\\?llo", "*\\*",
		"[", "[a", "a[", "[]", "[]]", "[^]", "[\\]]", "a\\", "\\", "\\\\", "*\\\\*", "[\x80-\xff]*", "[a-\xff]*", "[\xff-a]*", "x\x00*",
		"[!a]*", "***a", "a*a*a", "*-*", "[a-]*", "[-a]", "?", "??", "???", "", "[^a-z]*", "h[\\a]llo", "*[", "*]", "a*b*c", "*b*",
		"[a-c", "a[\\", "[\\", "h[a-]llo", "*?", "?*", "*\x00", "[^\\]]", "b[\xc3]*", "[]-a]", "\\[", "\\]", "[[]", "h[a-ce-g]llo"}
)

// TestKeysAgainstRedis: KEYS with every pattern of globPatterns over
// globKeys, and DBSIZE, answer as redis-server does (KEYS sorted: Redis
// answers in its hash table's order, idemgate in key order). A reserved
// key of the cluster's own is never listed or counted.
func TestKeysAgainstRedis(t *testing.T) {
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	follower := (tc.rc.WaitLeader(5*time.Second) + 1) % 3
	rc, ic := dialRaw(t, redisAddr), dialRaw(t, tc.addrs[follower])
	ask := func(args ...string) (want, got string) {
		rc.send(array(args...))
		ic.send(array(args...))
		return rc.replies(1)[0], ic.replies(1)[0]
	}
	if want, got := ask("DBSIZE"); want != ":0\r\n" || got != ":0\r\n" {
		t.Fatalf("DBSIZE of an empty store: redis %q, idemgate %q", want, got)
	}
	for _, k := range globKeys {
		ask("SET", k, "v")
	}
	ask("SET", "gone", "v", "PX", "1")
	waitExpired(t, rc, "gone")
	waitExpired(t, ic, "gone")
	for _, p := range globPatterns {
		want, got := ask("KEYS", p)
		if sortedArray(t, got) != sortedArray(t, want) {
			t.Errorf("KEYS %q:\n idemgate %q\n redis    %q", p, got, want)
		}
	}
	for _, cmd := range [][]string{{"DBSIZE"}, {"DBSIZE", "x"}, {"KEYS"}, {"KEYS", "a", "b"}} {
		if want, got := ask(cmd...); got != want {
			t.Errorf("%q: idemgate %q, redis %q", cmd, got, want)
		}
	}
}

// sortedArray is a reply array of bulk strings with its elements sorted.
func sortedArray(t *testing.T, r string) string {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(r, "*%d\r\n", &n); err != nil {
		return r // not an array: compared as it is
	}
	rest := r[strings.Index(r, "\r\n")+2:]
	elems := make([]string, n)
	for i := range elems {
		var l int
		if _, err := fmt.Sscanf(rest, "$%d\r\n", &l); err != nil {
			t.Fatalf("element %d of %q", i, r)
		}
		rest = rest[strings.Index(rest, "\r\n")+2:]
		elems[i], rest = rest[:l], rest[l+2:]
	}
	sort.Strings(elems)
	return fmt.Sprintf("%d:%q", n, elems)
}

// TestStringsHostile: edits that would pass the value bound, numbers
// past every range, and commands that cannot be half applied: each
// answer is exact, and the keys are as before it.
func TestStringsHostile(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.MaxBulk = 6000 })
	tooLong := "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"
	notFloat := "-ERR value is not a valid float\r\n"
	tests := []struct {
		name    string
		send    []string
		replies []string
	}{
		{"APPEND past the bound", []string{"SET hs:a " + strings.Repeat("x", 5996), "APPEND hs:a 12345", "APPEND hs:a 1234", "STRLEN hs:a"},
			[]string{"+OK\r\n", tooLong, ":6000\r\n", ":6000\r\n"}},
		{"SETRANGE past the bound", []string{"SETRANGE hs:b 6000 x", "SETRANGE hs:b 5999 xy", "EXISTS hs:b", "SETRANGE hs:b 5999 x",
			"SETRANGE hs:b 9223372036854775807 x", "SETRANGE hs:b 9223372036854775807 <empty>", "STRLEN hs:b"},
			[]string{tooLong, tooLong, ":0\r\n", ":6000\r\n", tooLong, ":6000\r\n", ":6000\r\n"}},
		{"INCRBYFLOAT of what is no number", []string{"INCRBYFLOAT hs:f " + strings.Repeat("1", 5120), "INCRBYFLOAT hs:f 1" + strings.Repeat("0", 4933), "INCRBYFLOAT hs:f 0x1p99999",
			"INCRBYFLOAT hs:f 1e-99999", "INCRBYFLOAT hs:f 1e999999999999", "INCRBYFLOAT hs:f 0b11", "EXISTS hs:f",
			"INCRBYFLOAT hs:f " + strings.Repeat("1", 100), "INCRBYFLOAT hs:f -" + strings.Repeat("1", 100)},
			[]string{notFloat, notFloat, notFloat, notFloat, notFloat, notFloat, ":0\r\n",
				// Redis's own answer: a 64-bit mantissa keeps 19 digits of it.
				"$100\r\n1111111111111111111140245447678044615563042495896997574164459318137788706373851906059943673763725312\r\n", "$1\r\n0\r\n"}},
		{"MSETNX with one key present sets none", []string{"SET hs:m2 old", "MSETNX hs:m1 a hs:m2 b hs:m3 c", "MGET hs:m1 hs:m2 hs:m3"},
			[]string{"+OK\r\n", ":0\r\n", "*3\r\n$-1\r\n$3\r\nold\r\n$-1\r\n"}},
		{"MSET of a reserved key writes none", []string{"MSET hs:r1 a \x00node/x b", "EXISTS hs:r1"},
			[]string{"-ERR reserved key: keys that begin with a NUL byte are idemgate's own\r\n", ":0\r\n"}},
		{"RENAME onto a reserved key moves nothing", []string{"SET hs:n v", "RENAME hs:n \x00node/x", "GET hs:n"},
			[]string{"+OK\r\n", "-ERR reserved key: keys that begin with a NUL byte are idemgate's own\r\n", "$1\r\nv\r\n"}},
		// Redis's own answers; a lifetime it takes past the store's
		// 100 years is 100 years.
		{"GETEX lifetimes past the bound", []string{"SET hs:g v", "GETEX hs:g EX 9223372036854775807", "GETEX hs:g EX 9223372036854775",
			"GETEX hs:g EX 9223372036854775808", "TTL hs:g", "GETEX hs:g PXAT 9223372036854775807", "TTL hs:g"},
			[]string{"+OK\r\n", "-ERR invalid expire time in 'getex' command\r\n", "-ERR invalid expire time in 'getex' command\r\n",
				"-ERR value is not an integer or out of range\r\n", ":-1\r\n", "$1\r\nv\r\n", ":3153600000\r\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, srv.Addr())
			for i, cmd := range tt.send {
				args := strings.Fields(cmd)
				for j := range args {
					args[j] = strings.ReplaceAll(args[j], "<empty>", "")
				}
				c.send(array(args...))
				if r := c.replies(1)[0]; r != tt.replies[i] {
					t.Fatalf("%q = %q, want %q", cmd, r, tt.replies[i])
				}
			}
		})
	}
}
