package script

import (
	"context"
	"testing"
	"time"
)

// FuzzCompileRun: no script body, however malformed, panics the parser,
// the compiler or a run; a run ends within its budget.
func FuzzCompileRun(f *testing.F) {
	for _, seed := range []string{"return 1", "return x(", "local t = {} t[1] = t return t", "error({err='x'})",
		"return redis.call('get', KEYS[1])", "return string.rep('x', 10)", "while true do end", "--[[", "return '\\z'",
		"goto x", "return ...", "return #ARGV .. tostring(1/0)", "setfenv(0, {})", "return getmetatable('').__index"} {
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
