package resp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/script"
)

// TestScriptsHostile: scripts that never end, allocate without bound,
// recurse without end, or reach for what is not theirs, and EVAL misused,
// each get their exact answer; nothing a stopped script wrote is applied;
// and the listener serves the next command on the same connection.
func TestScriptsHostile(t *testing.T) {
	store := memstore.New(t)
	if err := store.SetNodeAPI(ctxT(t, 10*time.Second), "n1", "127.0.0.1:9001"); err != nil {
		t.Fatal(err)
	}
	quick := startServer(t, store, "mem", func(c *Config) {
		c.Auth = testAuth
		c.Script.Timeout = 200 * time.Millisecond
	})
	small := startServer(t, store, "mem", func(c *Config) {
		c.Auth = testAuth
		c.Script.Timeout = 5 * time.Minute // the memory cap, not the clock, must stop these
		c.Script.MaxMemory = 16 << 20
	})
	sha := func(body string) string { return script.SHA1([]byte(body)) }
	where := func(body string, line int) string {
		return fmt.Sprintf(" script: %s, on @user_script:%d.", sha(body), line)
	}
	loop := "redis.call('set', KEYS[1], 'written before the loop') while true do end"
	bomb := "redis.call('set', KEYS[1], 'x') local t = {} local i = 0 while true do i = i + 1 t[i] = string.rep('x', 4096) .. i end"
	doubling := "local s = 'x' while true do s = s .. s end"
	rep := "return string.rep('x', 1e12)"
	concat := "local s = string.rep('x', 1e6) local t = {} for i = 1, 100 do t[i] = s end return table.concat(t)"
	format := "return string.format('%099999999d', 1)"
	reserved := "return redis.call('get', '\x00node/n1')"
	reservedP := "local r = redis.pcall('set', '\x00node/n1', 'evil') return r.err"
	nested := "return redis.call('eval', 'return 1', '0')"
	idem := "return redis.call('IDEM.TOKEN', 'pay')"
	huge := "return 1 --" + strings.Repeat("x", 1<<20)
	many := "for i = 1, 5000 do redis.call('get', 'hk:' .. i) end return 1"

	tests := []struct {
		name   string
		srv    *Server
		token  string
		args   []string
		reply  string // exact, or a prefix ending in "…"
		absent string // a key the command must not have written
	}{
		{"infinite loop", quick, "app-secret", []string{"EVAL", loop, "1", "h:loop"},
			"-ERR Script killed: script ran longer than its time limit (limit 200ms); nothing it wrote was applied\r\n", "h:loop"},
		{"loop swallowing its errors", quick, "app-secret", []string{"EVAL", "while true do pcall(function() while true do end end) end", "0"},
			"-ERR Script killed: script ran longer than its time limit (limit 200ms); nothing it wrote was applied\r\n", ""},
		{"table growth", small, "app-secret", []string{"EVAL", bomb, "1", "h:bomb"},
			"-ERR Script killed: script grew the heap past its memory limit (limit 16 MiB); nothing it wrote was applied\r\n", "h:bomb"},
		{"doubling string", small, "app-secret", []string{"EVAL", doubling, "0"},
			"-ERR Script killed: script grew the heap past its memory limit (limit 16 MiB); nothing it wrote was applied\r\n", ""},
		{"string.rep bomb", small, "app-secret", []string{"EVAL", rep, "0"},
			"-ERR user_script:1: string.rep: a result of 1000000000000 bytes, over the script memory limit" + where(rep, 1) + "\r\n", ""},
		{"table.concat bomb", small, "app-secret", []string{"EVAL", concat, "0"},
			"-ERR user_script:1: table.concat: a result over the script memory limit" + where(concat, 1) + "\r\n", ""},
		{"format width", small, "app-secret", []string{"EVAL", format, "0"},
			"-ERR user_script:1: invalid format (width or precision too long)" + where(format, 1) + "\r\n", ""},
		{"deep recursion", quick, "app-secret", []string{"EVAL", "local function f(n) return f(n + 1) + 1 end return f(1)", "0"},
			"-ERR lua callstack overflow\r\n", ""},
		{"reserved key", quick, "app-secret", []string{"EVAL", reserved, "0"},
			"-ERR reserved key: keys that begin with a NUL byte are idemgate's own" + where(reserved, 1) + "\r\n", ""},
		{"reserved key, pcall", quick, "app-secret", []string{"EVAL", reservedP, "0"},
			"$68\r\nERR reserved key: keys that begin with a NUL byte are idemgate's own\r\n", ""},
		{"read-only token writing", quick, "read-secret", []string{"EVAL", "return redis.call('set', KEYS[1], 'x')", "1", "h:ro"},
			"-NOPERM User reader has no permissions to run the 'set' command" + where("return redis.call('set', KEYS[1], 'x')", 1) + "\r\n", "h:ro"},
		{"read-only token reading", quick, "read-secret", []string{"EVAL", "return redis.call('exists', KEYS[1])", "1", "h:ro"}, ":0\r\n", ""},
		{"EVAL in a script", quick, "app-secret", []string{"EVAL", nested, "0"},
			"-ERR This Redis command is not allowed from script" + where(nested, 1) + "\r\n", ""},
		{"idemgate's own command in a script", quick, "app-secret", []string{"EVAL", idem, "0"},
			"-ERR This Redis command is not allowed from script" + where(idem, 1) + "\r\n", ""},
		{"compare-and-set in a script", quick, "app-secret", []string{"EVAL", "redis.call('set', KEYS[1], 'a') return {redis.call('delex', KEYS[1], 'IFEQ', 'b'), redis.call('set', KEYS[1], 'c', 'IFEQ', 'a'), redis.call('delex', KEYS[1], 'IFEQ', 'c'), redis.call('exists', KEYS[1])}", "1", "h:cas"},
			"*4\r\n:0\r\n+OK\r\n:1\r\n:0\r\n", "h:cas"},
		{"huge script", quick, "app-secret", []string{"EVAL", huge, "0"}, ":1\r\n", ""},
		{"5000 keys read", small, "app-secret", []string{"EVAL", many, "0"}, ":1\r\n", ""},
		{"no arguments", quick, "app-secret", []string{"EVAL"}, "-ERR wrong number of arguments for 'eval' command\r\n", ""},
		{"no numkeys", quick, "app-secret", []string{"EVALSHA", sha("x")}, "-ERR wrong number of arguments for 'evalsha' command\r\n", ""},
		{"numkeys huge", quick, "app-secret", []string{"EVAL", "return 1", "99999999999999999999"}, "-ERR value is not an integer or out of range\r\n", ""},
		{"sha too short", quick, "app-secret", []string{"EVALSHA", "abc", "0"}, "-NOSCRIPT No matching script. Please use EVAL.\r\n", ""},
		{"sha too long", quick, "app-secret", []string{"EVALSHA", strings.Repeat("a", 41), "0"}, "-NOSCRIPT No matching script. Please use EVAL.\r\n", ""},
		{"sha not hex", quick, "app-secret", []string{"EVALSHA", strings.Repeat("z", 40), "0"}, "-NOSCRIPT No matching script. Please use EVAL.\r\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, tt.srv.Addr())
			c.send(array("AUTH", tt.token))
			c.expect("AUTH", []string{"+OK\r\n"})
			c.send(array(tt.args...) + array("PING"))
			got := c.replies(2)
			if got[0] != tt.reply {
				t.Fatalf("reply = %q, want %q", clipString(got[0]), tt.reply)
			}
			if got[1] != "+PONG\r\n" {
				t.Fatalf("the next command after it = %q", got[1])
			}
			if tt.absent != "" {
				c.send("AUTH app-secret\r\nEXISTS " + tt.absent + "\r\n")
				c.expect("EXISTS "+tt.absent, []string{"+OK\r\n", ":0\r\n"})
			}
			if addr, ok := store.NodeAPI("n1"); !ok || addr != "127.0.0.1:9001" {
				t.Fatalf("the reserved record is %q, %v after it", addr, ok)
			}
		})
	}
}

func clipString(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// TestScriptTooLarge: a script whose writes together exceed one log
// entry gets the store's error, and none of them is applied; the cluster
// serves the next script.
func TestScriptTooLarge(t *testing.T) {
	if raceDetector {
		// The race detector checks every byte of every copy: a 3 MiB
		// script argument then took over 10 s a write (150 ms without),
		// past the clients' timeouts. .ci/run runs this test without it.
		t.Skip("3 MiB script arguments under the race detector outlast the clients' timeouts; run without -race")
	}
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	ctx := ctxT(t, 60*time.Second)
	for _, node := range []int{leader, (leader + 1) % 3} {
		c := client(t, tc.addrs[node])
		big := strings.Repeat("v", 3<<20)
		keys := []string{fmt.Sprint("big:1:", node), fmt.Sprint("big:2:", node), fmt.Sprint("big:3:", node)}
		_, err := c.Eval(ctx, "for i = 1, 3 do redis.call('set', KEYS[i], ARGV[1]) end return 1", keys, big).Result()
		if err == nil || !strings.HasPrefix(err.Error(), "ERR command too large for the store") {
			t.Fatalf("node %d: 9 MiB of writes = %v, want the store's refusal", node, err)
		}
		// A 3 MiB entry replicated on a loaded machine can cost the
		// cluster its leader for a moment: the reads and the write below
		// change nothing when sent again, so they are, on CLUSTERDOWN or
		// a timeout, at most 5 times.
		var n int64
		for attempt := 1; attempt <= 5; attempt++ {
			if n, err = c.Exists(ctx, keys...).Result(); err == nil || !transient(err) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil || n != 0 {
			t.Fatalf("node %d: %d of the keys exist after the refusal (%v)", node, n, err)
		}
		var v int64
		for attempt := 1; attempt <= 5; attempt++ {
			v, err = c.Eval(ctx, "redis.call('set', KEYS[1], ARGV[1]) return redis.call('strlen', KEYS[1])", keys[:1], big).Int64()
			if err == nil || !transient(err) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil || v != 3<<20 {
			t.Fatalf("node %d: one 3 MiB write after it = %d, %v", node, v, err)
		}
	}
}

// transient: an answer a command that changes nothing when sent again may
// be sent again on: an election (CLUSTERDOWN) or the listener's timeout.
func transient(err error) bool {
	return strings.HasPrefix(err.Error(), "CLUSTERDOWN") || strings.HasPrefix(err.Error(), "ERR timeout")
}
