package script

import (
	"context"
	"strings"
	"testing"
	"time"
)

// FuzzCompileRun: no script body, however malformed, deep or greedy,
// panics the parser, the compiler or a run, or ends the process; a run
// ends within its budget.
func FuzzCompileRun(f *testing.F) {
	for _, seed := range []string{"return 1", "return x(", "local t = {} t[1] = t return t", "error({err='x'})",
		"return redis.call('get', KEYS[1])", "return string.rep('x', 10)", "while true do end", "--[[", "return '\\z'",
		"goto x", "return ...", "return #ARGV .. tostring(1/0)", "setfenv(0, {})", "return getmetatable('').__index",
		// issue 34's hostile inputs: nesting, result counts, one-step allocations, replies
		"return " + strings.Repeat("{", 5000), "return " + strings.Repeat("(", 199) + "1" + strings.Repeat(")", 199),
		"return 'x'" + strings.Repeat("..'x'", 199), "return 1" + strings.Repeat("+1", 3000),
		"return unpack({}, 1, 300000)", "return string.byte(string.rep('x', 300000), 1, -1)",
		"return string.find('x', string.rep('()', 3000))", "return loadstring(string.rep('{', 1e5))",
		"local t = {} t[67108863] = 1", "local t = {} table.insert(t, 67108863, 1)",
		"local s = string.rep('x', 4e6) return s..s..s..s..s", "local t = {1} for i = 1, 23 do t = {t, t} end return t",
		"local t = {} t[1] = t t[2] = t return t", "local t = {} t[1] = t return t",
		// Redis's C libraries: deep, self-holding, exponential, truncated, huge counts
		"local t = {} t[1] = t return cjson.encode(t)", "return cjson.decode(string.rep('[', 5000))",
		"return cjson.decode('{\"a\":[1,2.5e3,\"\\u00e9\",null,true]}')", "return cjson.decode(ARGV[1])",
		"local t = {1} for i = 1, 30 do t = {t, t} end return cjson.encode(t)",
		"return cmsgpack.unpack(cmsgpack.pack(1, 'a', {1, {x = 2}}, 1.5, -2^40))", "return cmsgpack.unpack(ARGV[1])",
		"return cmsgpack.unpack(string.char(0xdd, 255, 255, 255, 255))", "return cmsgpack.unpack_limit(ARGV[1], 2, 1)",
		"local t = {1} for i = 1, 15 do t = {t, t, t, t} end return cmsgpack.pack(t)",
		"return struct.pack('>i4 c0 !8 d s', 1, 'ab', 2.5, 'x')", "return struct.unpack(ARGV[1], 'abcdefgh')",
		"return struct.pack('c99999999999', 'x')", "return {bit.band(-1, 2^40), bit.tohex(-1, -8), bit.rol(1, 33)}",
		"#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')", "#!lua flags=x\nreturn 1"} {
		f.Add([]byte(seed))
	}
	cfg := DefaultConfig()
	cfg.Timeout = 50 * time.Millisecond
	cfg.MaxMemory = 16 << 20
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := Compile(body)
		if err != nil {
			return
		}
		s.Run(context.Background(), cfg, [][]byte{[]byte("k")}, [][]byte{[]byte("a")}, &echoCaller{})
	})
}
