package script

import (
	"errors"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// TestRunHostile: each input of issue 34's B2 and B3 classes (and their
// kin) answers its exact error, within the budget: none ends the process,
// none makes more than the limit before it is refused, and a state that
// panicked is never used again. Before the fix, unpack and string.byte
// ended the test binary ("registry overflow" panicking out of PCall's
// recovery), and the far array stores took over 3 GiB.
func TestRunHostile(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Timeout = time.Minute // the memory limit, not the clock, must stop these
	cfg.MaxMemory = 64 << 20
	killed := "-ERR Script killed: script grew the heap past its memory limit (limit 64 MiB); nothing it wrote was applied"
	lua := func(body, msg string) string {
		return "-ERR user_script:1: " + msg + " script: " + SHA1([]byte(body)) + ", on @user_script:1."
	}
	// Each of these makes more than the limit in one step, whatever the
	// heap held before (the heap's growth is a sampled estimate: garbage
	// of earlier runs, swept meanwhile, makes it drift).
	big := "local s = string.rep('x', 40 * 1024 * 1024) "
	tests := []struct {
		name, body string
		want       string // "" for lua(body, msg)
		msg        string
		stopped    error
	}{
		{name: "unpack of 300,000", body: "return unpack({}, 1, 300000)", msg: "too many results to unpack"},
		{name: "unpack at Lua's bound", body: "return #{unpack({}, 1, 7997)}", want: "0"},
		{name: "unpack one past it", body: "return #{unpack({}, 1, 7998)}", msg: "too many results to unpack"},
		{name: "unpack of a huge table", body: "local t = {} for i = 1, 9000 do t[i] = i end return #{unpack(t)}", msg: "too many results to unpack"},
		{name: "unpack of 2^31", body: "return unpack({}, 1, 2^31)", msg: "too many results to unpack"},
		{name: "string.byte of 300,000", body: "return string.byte(string.rep('x', 300000), 1, -1)", msg: "stack overflow (string slice too long)"},
		{name: "string.byte at Lua's bound", body: "return #{string.byte(string.rep('x', 7997), 1, -1)}", want: "7997"},
		{name: "string.byte one past it", body: "return #{string.byte(string.rep('x', 7998), 1, -1)}", msg: "stack overflow (string slice too long)"},
		{name: "300,000 position captures", body: "return string.find('x', string.rep('()', 300000))", msg: "too many captures"},
		{name: "five million nested captures", body: "return string.find('x', string.rep('(', 5e6))", msg: "too many captures"},
		{name: "33 captures", body: "return string.match('x', string.rep('()', 33))", msg: "too many captures"},
		{name: "32 captures", body: "return select('#', string.match('x', string.rep('()', 32)))", want: "32"},
		{name: "parentheses escaped or in a set are no captures", body: "return string.match('((', '[(]%(' .. string.rep('()', 30))", want: "3"},
		{name: "a match recursing too deep", body: "return #string.match(string.rep('a', 200000), '.*')", msg: "pattern/input too complex"},
		{name: "varargs of 7,990 through 150 calls", body: "local function f(n, ...) if n == 0 then return select('#', ...) end local r = f(n - 1, ...) return r end return f(150, unpack({}, 1, 7990))",
			msg: "registry overflow"},
		{name: "varargs of 7,990 through 150 tail calls", body: "local function f(n, ...) if n == 0 then return select('#', ...) end return f(n - 1, ...) end return f(150, unpack({}, 1, 7990))", want: "7990"},
		{name: "a sparse index", body: "local t = {} t[67108863] = 1 return 1", want: killed, stopped: ErrMemory},
		{name: "a sparse index by rawset", body: "local t = {} rawset(t, 67108863, 1) return 1", want: killed, stopped: ErrMemory},
		{name: "a sparse table.insert", body: "local t = {} table.insert(t, 67108863, 1) return 1", want: killed, stopped: ErrMemory},
		{name: "a sparse index caught by pcall", body: "local t = {} pcall(function() t[67108863] = 1 end) return 1", want: killed, stopped: ErrMemory},
		{name: "a small gap", body: "local t = {} t[1000] = 1 return #t", want: "1000"},
		{name: "a 10-way concatenation", body: big + "local r = s..s..s..s..s..s..s..s..s..s return #r", want: killed, stopped: ErrMemory},
		{name: "a 2-way concatenation", body: big + "local r = s..s return #r", want: killed, stopped: ErrMemory},
		{name: "string.rep of a big string", body: big + "return #string.rep(s, 2)", msg: "string.rep: a result of 83886080 bytes, over the script memory limit"},
		{name: "string.format of big strings", body: big + "return #string.format('%s%s', s, s)", want: killed, stopped: ErrMemory},
		{name: "table.concat past the limit", body: big + "return #table.concat({s, s})", msg: "table.concat: a result over the script memory limit"},
		{name: "redis.call with big arguments", body: big + "return redis.call('set', 'k', s, s)", want: killed, stopped: ErrMemory},
		{name: "a reply of {t, t} 23 times", body: "local t = {1} for i = 1, 23 do t = {t, t} end return t", want: killed, stopped: ErrMemory},
		{name: "a reply holding itself twice", body: "local t = {} t[1] = t t[2] = t return t", want: killed, stopped: ErrMemory},
		{name: "a reply of one string many times", body: big + "local t = {} for i = 1, 100 do t[i] = s end return t", want: killed, stopped: ErrMemory},
		{name: "a reply holding itself once", body: "local t = {} t[1] = t return t", want: strings.Repeat("[", maxReplyDepth) + "-ERR reached lua stack limit" + strings.Repeat("]", maxReplyDepth)},
		{name: "loadstring of a million braces", body: "local f, err = loadstring('return ' .. string.rep('{', 1e6)) return err",
			want: `"[string \"return ` + strings.Repeat("{", 43-len("return ")) + `...\"]:1: chunk has too many syntax levels"`},
		{name: "load of a million braces", body: "local done = false local f, err = load(function() if done then return nil end done = true return string.rep('{', 1e6) end) return err",
			want: `"(load):1: chunk has too many syntax levels"`},
		{name: "loadstring still loads", body: "return loadstring('return 1 + 1')()", want: "2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runtime.GC() // no earlier case's garbage to sweep meanwhile (budget.go)
			r, err := runBody(t, cfg, tt.body)
			want := tt.want
			if want == "" {
				want = lua(tt.body, tt.msg)
			}
			if got := show(r); got != want {
				t.Fatalf("reply = %.300s, want %.300s", got, want)
			}
			if !errors.Is(err, tt.stopped) || (tt.stopped == nil && err != nil) {
				t.Fatalf("stopped = %v, want %v", err, tt.stopped)
			}
		})
	}
	// What those runs left: nothing much (a run holds up to its limit,
	// and is then dropped).
	runtime.GC()
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	if heap := s[0].Value.Uint64(); heap > 256<<20 {
		t.Fatalf("the heap holds %d MiB after the runs", heap>>20)
	}
}
