package resp

import (
	"fmt"
	"runtime"
	rtmetrics "runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/script"
	"github.com/redis/go-redis/v9"
)

// scriptLimitCases are issue 34's B1–B3 inputs and their kin, each with
// the exact reply (for a node whose scripts may grow the heap 64 MiB):
// code nested too deep, builtins answering too many values, one step
// allocating past the limit, a reply that explodes. reply "" is Lua's
// error msg raised on line 1.
func scriptLimitCases() []struct{ name, body, reply, msg string } {
	rep := strings.Repeat
	levels := "-ERR Error compiling script (new function): user_script:1: chunk has too many syntax levels\r\n"
	killed := "-ERR Script killed: script grew the heap past its memory limit (limit 64 MiB); nothing it wrote was applied\r\n"
	big := "local s = string.rep('x', 40 * 1024 * 1024) "
	return []struct{ name, body, reply, msg string }{
		{name: "a million nested braces", body: "return " + rep("{", 1_000_000) + rep("}", 1_000_000), reply: levels},
		{name: "a million parentheses", body: "return " + rep("(", 1_000_000) + "1" + rep(")", 1_000_000), reply: levels},
		{name: "a million nots", body: "return " + rep("not ", 1_000_000) + "1", reply: levels},
		{name: "300 concatenations", body: "return 'x'" + rep("..'x'", 300), reply: levels},
		{name: "a 100,000-long sum", body: "return 1" + rep("+1", 100_000), reply: levels},
		{name: "20,000 elseifs", body: "local x = 1 if x == 0 then return 0 " + rep("elseif x == 0 then return 0 ", 20_000) + "end", reply: levels},
		{name: "unpack of 300,000", body: "return unpack({}, 1, 300000)", msg: "too many results to unpack"},
		{name: "string.byte of 300,000", body: "return string.byte(string.rep('x', 300000), 1, -1)", msg: "stack overflow (string slice too long)"},
		{name: "300,000 captures", body: "return string.find('x', string.rep('()', 300000))", msg: "too many captures"},
		{name: "5 million nested captures", body: "return string.find('x', string.rep('(', 5e6))", msg: "too many captures"},
		{name: "loadstring of a million braces", body: "local f, err = loadstring(string.rep('{', 1e6)) return err",
			reply: "$93\r\n[string \"" + strings.Repeat("{", 43) + "...\"]:1: chunk has too many syntax levels\r\n"},
		{name: "a sparse index", body: "local t = {} t[67108863] = 1 return 1", reply: killed},
		{name: "a sparse table.insert", body: "local t = {} table.insert(t, 67108863, 1) return 1", reply: killed},
		{name: "a 10-way concatenation", body: big + "local r = s..s..s..s..s..s..s..s..s..s return #r", reply: killed},
		{name: "string.format of big strings", body: big + "return #string.format('%s%s', s, s)", reply: killed},
		{name: "a reply of {t, t} 23 times", body: "local t = {1} for i = 1, 23 do t = {t, t} end return t", reply: killed},
		{name: "a reply holding itself twice", body: "local t = {} t[1] = t t[2] = t return t", reply: killed},
		{name: "a reply holding itself once", body: "local t = {} t[1] = t return t",
			reply: rep("*1\r\n", 1000) + "-ERR reached lua stack limit\r\n"},
	}
}

// TestScriptLimitsCluster: on a secured 3-node cluster, with nothing but a
// read-role token, each input of scriptLimitCases, sent to the leader and
// to a follower, by EVAL (and the deepest by SCRIPT LOAD), answers its
// exact error; then every node answers, the cluster takes a write and a
// linearizable read, every node's state hashes the same, and this
// process's heap stayed under a bound far below what one of the inputs
// took before (the far array stores held 3 GiB; the nesting and
// unpack ended the process).
func TestScriptLimitsCluster(t *testing.T) {
	tc := startCluster(t, func(c *Config) {
		c.Auth = testAuth
		c.Script.MaxMemory = 64 << 20
		c.Script.Timeout = 5 * time.Minute // the memory limit, not the clock, must stop these
	})
	leader := tc.rc.WaitLeader(10 * time.Second)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the heap's peak, every 5 ms, for at most 10 minutes
		defer close(sampled)
		s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for i := 0; i < 120_000; i++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			rtmetrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
		}
	}()
	for _, node := range []int{leader, (leader + 1) % 3} {
		for _, tt := range scriptLimitCases() {
			t.Run(fmt.Sprintf("node %d: %s", node, tt.name), func(t *testing.T) {
				want := tt.reply
				if want == "" {
					want = fmt.Sprintf("-ERR user_script:1: %s script: %s, on @user_script:1.\r\n", tt.msg, script.SHA1([]byte(tt.body)))
				}
				c := dialRaw(t, tc.addrs[node])
				c.nc.SetDeadline(time.Now().Add(3 * time.Minute))
				c.send(array("AUTH", "read-secret"))
				c.expect("AUTH", []string{"+OK\r\n"})
				// An input that keeps a node's CPU for seconds (the
				// replies that explode) can cost the cluster its leader for
				// a moment: a read-only script changes nothing when sent
				// again, so it is, on CLUSTERDOWN, at most 5 times.
				var got []string
				for attempt := 1; attempt <= 5; attempt++ {
					c.send(array("EVAL", tt.body, "0") + array("PING"))
					if got = c.replies(2); !strings.HasPrefix(got[0], "-CLUSTERDOWN") {
						break
					}
					time.Sleep(500 * time.Millisecond)
				}
				if got[0] != want {
					t.Fatalf("reply = %q, want %q", clipString(got[0]), clipString(want))
				}
				if got[1] != "+PONG\r\n" {
					t.Fatalf("the next command after it = %q", got[1])
				}
				if tt.reply == "" || !strings.HasPrefix(tt.reply, "-ERR Error compiling") {
					return
				}
				c.send(array("SCRIPT", "LOAD", tt.body))
				if r := c.replies(1)[0]; r != want {
					t.Fatalf("SCRIPT LOAD = %q, want %q", clipString(r), want)
				}
			})
		}
	}
	close(stop)
	<-sampled
	// Every node answers; the cluster writes and reads; the replicas agree.
	for i, addr := range tc.addrs {
		c := dialRaw(t, addr)
		c.send(array("PING"))
		c.expect(fmt.Sprint("PING node ", i), []string{"+PONG\r\n"})
	}
	ctx := ctxT(t, 60*time.Second)
	w := client(t, tc.addrs[(leader+1)%3], func(o *redis.Options) { o.Username, o.Password = "app", "app-secret" })
	var err error
	for attempt := 1; attempt <= 5; attempt++ { // a SET of the same value changes nothing when sent again
		if err = w.Set(ctx, "limits:after", "v", 0).Err(); err == nil || !transient(err) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("a write after the inputs: %v", err)
	}
	r := client(t, tc.addrs[(leader+2)%3], func(o *redis.Options) { o.Username, o.Password = "app", "app-secret" })
	if v, err := r.Get(ctx, "limits:after").Result(); err != nil || v != "v" {
		t.Fatalf("a read after the inputs = %q, %v", v, err)
	}
	tc.rc.WaitConverged(30 * time.Second)
	runtime.GC()
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	rtmetrics.Read(s)
	t.Logf("heap: peak %d MiB while the inputs ran, %d MiB after", peak.Load()>>20, s[0].Value.Uint64()>>20)
	if p := peak.Load(); p > 1<<30 {
		t.Errorf("the heap peaked at %d MiB (bound 1024 MiB)", p>>20)
	}
	if after := s[0].Value.Uint64(); after > 256<<20 {
		t.Errorf("the heap holds %d MiB after the inputs (bound 256 MiB)", after>>20)
	}
}

// TestScriptLimitsAgainstRedis: the limits Redis's Lua has answer as
// redis-server 7 answers, byte for byte, at their bounds and past them:
// results (unpack, string.byte), captures, and syntax levels.
func TestScriptLimitsAgainstRedis(t *testing.T) {
	redisAddr := startRedisServer(t)
	// One node's listener over the real state machine: what is compared
	// is the script's reply, which no election may delay.
	srv := startServer(t, memstore.New(t), "mem", nil)
	rep := strings.Repeat
	for _, body := range []string{
		"return unpack({}, 1, 300000)",
		"return #{unpack({}, 1, 7997)}",
		"return #{unpack({}, 1, 7998)}",
		"local t = {} for i = 1, 8000 do t[i] = i end return #{unpack(t)}",
		"return select('#', unpack({}, 1, 7990))",
		"return string.byte(string.rep('x', 300000), 1, -1)",
		"return #{string.byte(string.rep('x', 7997), 1, -1)}",
		"return #{string.byte(string.rep('x', 7998), 1, -1)}",
		"return string.match('x', string.rep('()', 33))",
		"return select('#', string.match('x', string.rep('()', 32)))",
		"return " + rep("(", 198) + "1" + rep(")", 198),
		"return " + rep("(", 199) + "1" + rep(")", 199),
		"return 'x'" + rep("..'x'", 198),
		"return 'x'" + rep("..'x'", 199),
		"return #" + rep("{", 198) + rep("}", 198),
		"return #" + rep("{", 199) + rep("}", 199),
		rep("do ", 199) + rep(" end", 199) + " return 1",
		rep("do ", 200) + rep(" end", 200) + " return 1",
		"return " + rep("(function() return ", 66) + "1" + rep(" end)()", 66),
		"return " + rep("(function() return ", 67) + "1" + rep(" end)()", 67),
		"return " + rep("{", 100_000) + rep("}", 100_000),
	} {
		rc, ic := dialRaw(t, redisAddr), dialRaw(t, srv.Addr())
		rc.send(array("EVAL", body, "0"))
		ic.send(array("EVAL", body, "0"))
		if want, got := rc.replies(1)[0], ic.replies(1)[0]; got != want {
			t.Errorf("EVAL %q:\n idemgate %q\n redis    %q", clipString(body), clipString(got), clipString(want))
		}
	}
}
