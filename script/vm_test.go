package script

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// echoCaller answers GET with a bulk, INCR with an error, anything else
// with +OK: enough to see the conversions and the error texts.
type echoCaller struct{ calls int }

func (c *echoCaller) Call(args [][]byte, _ int) Reply {
	c.calls++
	switch strings.ToLower(string(args[0])) {
	case "get":
		if string(args[1]) == "nokey" {
			return Reply{Kind: Nil}
		}
		return Reply{Kind: Bulk, Str: string(args[1])}
	case "incr":
		return ErrorReply("ERR value is not an integer or out of range")
	}
	return Reply{Kind: Status, Str: "OK"}
}

func runBody(t *testing.T, cfg Config, body string, keys ...string) (Reply, error) {
	t.Helper()
	s, err := Compile([]byte(body))
	if err != nil {
		return ErrorReply(err.Error()), nil
	}
	var k [][]byte
	for _, x := range keys {
		k = append(k, []byte(x))
	}
	return s.Run(context.Background(), cfg, k, [][]byte{[]byte("a1")}, &echoCaller{})
}

func show(r Reply) string {
	switch r.Kind {
	case Nil:
		return "nil"
	case Int:
		return fmt.Sprint(r.Int)
	case Bulk:
		return fmt.Sprintf("%q", r.Str)
	case Status:
		return "+" + r.Str
	case Error:
		return "-" + r.Str
	case Bool:
		return map[bool]string{true: "#t", false: "#f"}[r.Int != 0]
	case Double:
		return fmt.Sprint(",", r.Float)
	}
	var b []string
	for _, e := range r.Elems {
		b = append(b, show(e))
	}
	return map[Kind]string{Map: "%", Set: "~"}[r.Kind] + "[" + strings.Join(b, " ") + "]"
}

// TestRun: replies and errors as redis-server 7.0.15 gives them for the
// same scripts (the differential test in package resp runs them against
// it; these need no server).
func TestRun(t *testing.T) {
	sha := func(body string) string { return SHA1([]byte(body)) }
	tests := []struct{ body, want string }{
		{"return {false, true, {ok='x'}, {err='e'}}", "[nil 1 +x -e]"},
		{"return {1, {2, {3}}, 'a'}", `[1 [2 [3]] "a"]`},
		{"return {1,2,3.7,'x',nil,4}", `[1 2 3 "x"]`},
		{"return redis.call('get', 'nokey')", "nil"},
		{"return type(redis.call('get', 'nokey'))", `"boolean"`},
		{"return redis.call('set', 'k', 'v')", "+OK"},
		{"return redis.call('set', 'k', 'v').ok", `"OK"`},
		{"return redis.pcall('incr', 'k')", "-ERR value is not an integer or out of range"},
		{"return redis.call('incr', 'k')", "-ERR value is not an integer or out of range script: " + sha("return redis.call('incr', 'k')") + ", on @user_script:1."},
		{"error('boom')", "-ERR user_script:1: boom script: " + sha("error('boom')") + ", on @user_script:1."},
		{"error({err='boom2'})", "-boom2 script: " + sha("error({err='boom2'})") + ", on @user_script:1."},
		{"\n\nlocal x = 1\nreturn redis.call('incr', 'k')", "-ERR value is not an integer or out of range script: " + sha("\n\nlocal x = 1\nreturn redis.call('incr', 'k')") + ", on @user_script:4."},
		{"return redis.error_reply('My Error')", "-My Error"},
		{"return redis.error_reply('no_space')", "-ERR no_space"},
		{"return redis.error_reply('-FOO bar baz')", "-FOO bar baz"},
		{"return {err='-FOO bar'}", "--FOO bar"},
		{"return redis.status_reply('')", "+"},
		{"return {ok=5}", "[]"},
		{"return {}", "[]"},
		{"return nil", "nil"},
		{"return", "nil"},
		{"return 3.99", "3"},
		{"return -3.99", "-3"},
		{"return 1e20", "-9223372036854775808"},
		{"return 0/0", "-9223372036854775808"},
		{"return redis.call()", "-ERR Please specify at least one argument for this redis lib call script: " + sha("return redis.call()") + ", on @user_script:1."},
		{"return redis.call('get', {})", "-ERR Lua redis lib command arguments must be strings or integers script: " + sha("return redis.call('get', {})") + ", on @user_script:1."},
		{"return redis.call('get', 1.5)", `"1.5"`},
		{"return redis.call('get', 3)", `"3"`},
		{"return redis.sha1hex('')", `"da39a3ee5e6b4b0d3255bfef95601890afd80709"`},
		{"return KEYS[1]..ARGV[1]", `"ka1"`},
		{"return #KEYS + #ARGV", "2"},
		{"return redis.replicate_commands()", "1"},
		// Redis nests as deep as its Lua stack allows, then says so.
		{"local t = {} t[1] = t return t", strings.Repeat("[", maxReplyDepth) + "-ERR reached lua stack limit" + strings.Repeat("]", maxReplyDepth)},
		{"return x(", "-ERR Error compiling script (new function): user_script at EOF: syntax error"},
		{"return rawget(_G, 'os')", "nil"},
		{"return rawget(_G, 'io')", "nil"},
		{"return rawget(_G, 'dofile')", "nil"},
		{"return (string.gsub('hello world', 'o', '0'))", `"hell0 w0rld"`},
		{"return collectgarbage('count')", "0"},
		{"math.randomseed(0) local a = {} for i = 1, 5 do a[i] = math.random(1000) end math.randomseed(0) for i = 1, 5 do if a[i] ~= math.random(1000) then return 0 end end return 1", "1"},
	}
	for _, tt := range tests {
		r, err := runBody(t, DefaultConfig(), tt.body, "k")
		if err != nil {
			t.Fatalf("%q: stopped: %v", tt.body, err)
		}
		if got := show(r); got != tt.want {
			t.Errorf("Run(%q) = %s, want %s", tt.body, got, tt.want)
		}
	}
}

// TestRunStopped: a script that never ends, or that allocates without
// bound, or recurses without end, is stopped with its error; the caller is
// told (a non-nil error) so it keeps nothing.
func TestRunStopped(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Timeout = 300 * time.Millisecond
	cfg.MaxMemory = 16 << 20
	mem := cfg
	mem.Timeout = time.Minute // the memory cap must stop these first
	tests := []struct {
		name, body string
		cfg        Config
		want       error
		reply      string
	}{
		{"loop", "while true do end", cfg, ErrTimeout, "-ERR Script killed: script ran longer than its time limit (limit 300ms); nothing it wrote was applied"},
		{"loop in pcall", "while true do pcall(function() while true do end end) end", cfg, ErrTimeout, ""},
		{"table growth", "local t = {} local i = 0 while true do i = i + 1 t[i] = string.rep('x', 1000) .. i end", mem, ErrMemory,
			"-ERR Script killed: script grew the heap past its memory limit (limit 16 MiB); nothing it wrote was applied"},
		{"doubling", "local s = 'x' while true do s = s .. s end", mem, ErrMemory, ""},
		{"big reps in few instructions", "local t = {} for i = 1, 12 do t[i] = string.rep('x', 4e6) end return #t", mem, ErrMemory, ""},
		// Exponential patterns (2^40 ways to place the optional a's): one
		// call into the matcher each, which the budget now reaches too.
		{"find", "return string.find(string.rep('a', 40), string.rep('a?', 40) .. string.rep('a', 40))", cfg, ErrTimeout,
			"-ERR Script killed: script ran longer than its time limit (limit 300ms); nothing it wrote was applied"},
		{"match", "return string.match(string.rep('a', 40), string.rep('a?', 40) .. string.rep('a', 40))", cfg, ErrTimeout, ""},
		{"gmatch", "for w in string.gmatch(string.rep('a', 40), string.rep('a?', 40) .. string.rep('a', 40)) do end", cfg, ErrTimeout, ""},
		{"gsub", "return string.gsub(string.rep('a', 40), string.rep('a?', 40) .. string.rep('a', 40), 'x')", cfg, ErrTimeout, ""},
		{"find in pcall", "return pcall(string.find, string.rep('a', 40), string.rep('a?', 40) .. string.rep('a', 40))", cfg, ErrTimeout, ""},
	}
	for _, tt := range tests {
		// The heap's growth is measured from a base that garbage of
		// earlier cases, swept during this one, would lower: none here.
		runtime.GC()
		r, err := runBody(t, tt.cfg, tt.body)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, reply %s; want %v", tt.name, err, show(r), tt.want)
			continue
		}
		if tt.reply != "" && show(r) != tt.reply {
			t.Errorf("%s: reply %s, want %s", tt.name, show(r), tt.reply)
		}
	}
	for _, body := range []string{
		"return string.rep('x', 1e9)",
		"local s = string.rep('x', 1e6) local t = {} for i = 1, 100 do t[i] = s end return table.concat(t)",
		"return string.format('%999999999d', 1)",
		"local s = string.rep('x', 1e6) return #string.gsub(s, '', string.rep('y', 200))",
		"local function f(n) return f(n + 1) + 1 end return f(1)",
	} {
		r, err := runBody(t, cfg, body)
		if err != nil || r.Kind != Error || !strings.HasPrefix(r.Str, "ERR ") {
			t.Errorf("%q = %s, %v; want a script error", body, show(r), err)
		}
	}
}

// TestRunIsolated: a run cannot change its environment (a global, a
// library function, a metatable): each attempt is refused as Redis 7
// refuses it, and the environment another run sees is as opened.
func TestRunIsolated(t *testing.T) {
	readonly := "Attempt to modify a readonly table"
	for body, want := range map[string]string{
		"leak = 1 return 1":                                                            "user_script:1: " + readonly,
		"function leak() end return 1":                                                 "user_script:1: " + readonly,
		"string.rep = function() return 'hijacked' end return 1":                       "user_script:1: " + readonly,
		"redis.call = function() return 'hijacked' end return 1":                       "user_script:1: " + readonly,
		"setmetatable(_G, {__index = function() return 'hijacked' end}) return 1":      readonly,
		"getmetatable(_G).__index = function() return 'hijacked' end return 1":         "user_script:1: " + readonly,
		"getmetatable('').__index = {rep = function() return 'hijacked' end} return 1": "user_script:1: " + readonly,
		"_G = {} return 1":                           "user_script:1: " + readonly,
		"setfenv(0, {redis = {}}) return 1":          "user_script:1: Script attempted to access nonexistent global variable 'setfenv'",
		"rawset(_G, 'leak', 1) return 1":             readonly,
		"_G['raw' .. 'set'](_G, 'leak', 1) return 1": readonly,
		"local f = rawset f(string, 'rep', function() return 'hijacked' end) return 1":        readonly,
		"loadstring('leak = 1')() return 1":                                                   `[string "leak = 1"]:1: ` + readonly,
		"table.insert(_G, 'kept') return 1":                                                   readonly,
		"table.insert(bit, 1, 1) return 1":                                                    readonly,
		"local m = setmetatable m(_G, {__index = function() return 'hijacked' end}) return 1": readonly,
		"return undefined_global":                                                             "user_script:1: Script attempted to access nonexistent global variable 'undefined_global'",
		"return _G[1]":                                                                        "user_script:1: Script attempted to access nonexistent global variable '1'",
		// What a script may change: its own tables, KEYS and ARGV among
		// them. Sorting or removing from a library, whose array part is
		// empty, writes nothing: Redis answers no error either.
		"table.sort(cjson) table.remove(bit) return 1":      "",
		"KEYS[2] = 'kept' return 1":                         "",
		"local t = {} setmetatable(t, {}) t.x = 1 return 1": "",
		"assert(load(function() return nil end)) return 1":  "",
	} {
		for i := 0; i < 3; i++ {
			r, err := runBody(t, DefaultConfig(), body, "k")
			if err != nil {
				t.Fatalf("%q: stopped: %v", body, err)
			}
			if want == "" {
				if r.Kind != Int {
					t.Fatalf("%q = %s, want 1", body, show(r))
				}
				continue
			}
			if r.Kind != Error || !strings.HasPrefix(r.Str, "ERR "+want+" script: ") {
				t.Fatalf("%q = %s, want the error %q", body, show(r), want)
			}
		}
		check := "return {type(rawget(_G, 'leak')), string.rep('a', 2), redis.call('get', 'x'), #KEYS, tostring(rawget(_G, 1)), type(getmetatable(_G).__index)}"
		want := `["nil" "aa" "x" 1 "nil" "function"]`
		if r, _ := runBody(t, DefaultConfig(), check, "k"); show(r) != want {
			t.Fatalf("after %q: %s, want %s", body, show(r), want)
		}
	}
}

// TestStoresIntoTables: which scripts' runs are compared before their
// state is reused (pristine.go): a lock's release stores into no table;
// a global, a field, a table built with its elements, a nested
// function's store, all do.
func TestStoresIntoTables(t *testing.T) {
	for body, want := range map[string]bool{
		`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`: false,
		`local n = tonumber(ARGV[1]) for i = 1, n do redis.call("incr", KEYS[1]) end return n`:              false,
		`leak = 1`:                           true,
		`local t = {} t.x = 1 return 1`:      true,
		`local t = {} t[KEYS[1]] = 1`:        true,
		`return {1, 2, 3}`:                   true,
		`local f = function() g = 1 end`:     true,
		`return (function() return 1 end)()`: false,
	} {
		s, err := Compile([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if s.stores != want {
			t.Errorf("%q: stores %v, want %v", body, s.stores, want)
		}
	}
}

// TestMainChunkArg: the main chunk has no arg of its own (no global
// either); a vararg function inside it still has Lua 5.0's arg
// table, as Redis's Lua 5.1 gives it.
func TestMainChunkArg(t *testing.T) {
	for body, want := range map[string]string{
		"return type(rawget(_G, 'arg'))":                             `"nil"`,
		"return select('#', ...)":                                    "0",
		"local function f(...) return arg.n end return f('a', 'b')":  "2",
		"local function f(...) return arg[2] end return f('a', 'b')": `"b"`,
	} {
		if r, err := runBody(t, DefaultConfig(), body); err != nil || show(r) != want {
			t.Errorf("%q = %s, %v; want %s", body, show(r), err, want)
		}
	}
}
