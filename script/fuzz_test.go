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
		"local t = {} t[1] = t t[2] = t return t", "local t = {} t[1] = t return t"} {
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
