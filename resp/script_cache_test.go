package resp

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/script"
)

// tooLarge is the refusal of body by a cache whose per-script cap is max.
func tooLarge(body string, max int64) string {
	return "-" + fmt.Sprintf(msgScriptTooLarge, (scriptCost([]byte(body))+1023)>>10, max>>10) + "\r\n"
}

func bulkSHA(body string) string { return "$40\r\n" + script.SHA1([]byte(body)) + "\r\n" }

// TestScriptCacheHostile: scripts whose compiled form would pass the
// per-script cap are refused before they are compiled, by EVAL and SCRIPT
// LOAD alike, whatever their source's size; what fits is kept, the least
// recently used dropped first, and a dropped script answers NOSCRIPT as
// Redis does (its library then sends it with EVAL).
func TestScriptCacheHostile(t *testing.T) {
	const cache, one = 2 << 20, 1 << 20
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.ScriptCache, c.MaxScriptSize = cache, one })
	dense := strings.Repeat("x=1 ", 40_000) // 160 KB of source, over 4 MB compiled
	funcs := "local t = {} " + strings.Repeat("t[#t+1] = function() return 1 end ", 60)
	comment := "return 1 --" + strings.Repeat("x", 900<<10) // 900 KiB that compile to nothing
	longStr := "return #'" + strings.Repeat("y", 400<<10) + "'"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"dense code over the cap, EVAL", []string{"EVAL", dense, "0"}, tooLarge(dense, one)},
		{"dense code over the cap, SCRIPT LOAD", []string{"SCRIPT", "LOAD", dense}, tooLarge(dense, one)},
		{"60 functions over the cap", []string{"SCRIPT", "LOAD", funcs}, tooLarge(funcs, one)},
		{"60 functions over the cap, EVAL_RO", []string{"EVAL_RO", funcs, "0"}, tooLarge(funcs, one)},
		{"never compiled, so unknown", []string{"EVALSHA", script.SHA1([]byte(dense)), "0"}, "-" + msgNoScript + "\r\n"},
		{"a long comment fits", []string{"SCRIPT", "LOAD", comment}, bulkSHA(comment)},
		{"and runs", []string{"EVALSHA", script.SHA1([]byte(comment)), "0"}, ":1\r\n"},
		{"a long string fits", []string{"EVAL", longStr, "0"}, fmt.Sprintf(":%d\r\n", 400<<10)},
		{"a compile error is still its own", []string{"SCRIPT", "LOAD", "return +"}, "-ERR Error compiling script (new function): user_script:1: syntax error near '+'\r\n"},
	} {
		c := dialRaw(t, srv.Addr())
		c.send(array(tc.args...))
		if got := c.replies(1)[0]; got != tc.want {
			t.Errorf("%s: reply %.200q, want %.200q", tc.name, got, tc.want)
		}
	}

	// Least recently used first: a script in use survives 60 loads, one
	// left alone is dropped and answers NOSCRIPT.
	srv.scripts.flush()
	c := dialRaw(t, srv.Addr())
	used, idle := "return 'used'", "return 'idle'"
	c.send(array("SCRIPT", "LOAD", used) + array("SCRIPT", "LOAD", idle))
	c.expect("two loads", []string{bulkSHA(used), bulkSHA(idle)})
	for i := range 60 {
		body := fmt.Sprintf("return %d", i)
		c.send(array("SCRIPT", "LOAD", body) + array("EVALSHA", script.SHA1([]byte(used)), "0"))
		c.expect(body, []string{bulkSHA(body), "$4\r\nused\r\n"})
	}
	c.send(array("EVALSHA", script.SHA1([]byte(idle)), "0") + array("SCRIPT", "EXISTS", script.SHA1([]byte(used)), script.SHA1([]byte(idle))) +
		array("EVAL", idle, "0") + array("EVALSHA", script.SHA1([]byte(idle)), "0"))
	c.expect("after 60 loads", []string{"-NOSCRIPT No matching script. Please use EVAL.\r\n", "*2\r\n:1\r\n:0\r\n", "$4\r\nidle\r\n", "$4\r\nidle\r\n"})
	if n, bytes, evicted := srv.scripts.size(); bytes > cache || evicted == 0 {
		t.Errorf("cache after 62 loads: %d scripts, %d bytes, %d dropped; want at most %d bytes, some dropped", n, bytes, evicted, cache)
	}
}

// TestScriptCacheBounded: hundreds of distinct scripts, each small in
// source but holding about 90 KiB compiled (four functions), keep the
// cache within its bound, by its own count and by the heap's growth
// (generously: four times the bound and 8 MiB).
func TestScriptCacheBounded(t *testing.T) {
	const cache = 4 << 20
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.ScriptCache, c.MaxScriptSize = cache, 1<<20 })
	c := dialRaw(t, srv.Addr())
	before := heapHeld()
	const loads = 600
	for i := range loads {
		body := fmt.Sprintf("local a, b, c, d = function() return %d end, function() end, function() end, function() end return a()", i)
		c.send(array("EVAL", body, "0"))
		c.expect(body, []string{fmt.Sprintf(":%d\r\n", i)})
		if _, bytes, _ := srv.scripts.size(); bytes > cache {
			t.Fatalf("after %d loads the cache counts %d bytes, over its %d", i+1, bytes, cache)
		}
	}
	grown := heapHeld() - before
	n, bytes, evicted := srv.scripts.size()
	t.Logf("%d loads: %d scripts kept, %d bytes counted, %d dropped; heap grew %d", loads, n, bytes, evicted, grown)
	if grown > 4*cache+8<<20 {
		t.Errorf("heap grew %d bytes over %d distinct scripts, want at most %d", grown, loads, 4*cache+8<<20)
	}
}

// TestScriptEvictedLikeRedis: a script the cache dropped answers EVALSHA
// as redis-server answers a script it never had.
func TestScriptEvictedLikeRedis(t *testing.T) {
	redisAddr := startRedisServer(t)
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.ScriptCache, c.MaxScriptSize = 1<<20, 1<<20 })
	c := dialRaw(t, srv.Addr())
	first := "return 'first'"
	c.send(array("SCRIPT", "LOAD", first))
	c.expect("load", []string{bulkSHA(first)})
	for i := range 20 { // 20 × 65 KiB pass 1 MiB
		c.send(array("SCRIPT", "LOAD", fmt.Sprintf("return %d", i)))
		c.replies(1)
	}
	req := array("EVALSHA", script.SHA1([]byte(first)), "0") + array("EVALSHA_RO", script.SHA1([]byte(first)), "0")
	want := ask2(t, redisAddr, req)
	c.send(req)
	if got := c.replies(2); strings.Join(got, "") != strings.Join(want, "") {
		t.Fatalf("an evicted script: %q, redis-server: %q", got, want)
	}
}

func ask2(t *testing.T, addr, req string) []string {
	c := dialRaw(t, addr)
	c.send(req)
	return c.replies(2)
}

// TestScriptQueueHostile: with one script slot held by a script that
// never ends, every other script (EVAL, EVAL_RO, EVALSHA, a compile by
// SCRIPT LOAD, a transaction's script, eight at once) waits its queue
// wait and is refused with TRYAGAIN, nothing run; what needs no slot (a
// cached SCRIPT LOAD, SCRIPT EXISTS, a plain write) is answered; once the
// loop is stopped, scripts run again.
func TestScriptQueueHostile(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) {
		c.ScriptRuns, c.ScriptQueueWait, c.Script.Timeout = 1, 100*time.Millisecond, 3*time.Second
	})
	cached := "return redis.call('get', KEYS[1])"
	pre := dialRaw(t, srv.Addr())
	pre.send(array("SCRIPT", "LOAD", cached))
	pre.expect("load", []string{bulkSHA(cached)})
	loop := dialRaw(t, srv.Addr())
	loop.send(array("EVAL", "redis.call('set', KEYS[1], 'x') while true do end", "1", "q:loop"))
	for deadline := time.Now().Add(10 * time.Second); len(srv.runs.ch) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the looping script never took its slot")
		}
	}
	busy := "-" + fmt.Sprintf(msgScriptsBusy, 1, 100*time.Millisecond) + "\r\n"
	for _, tc := range []struct {
		name string
		req  string
		want []string
	}{
		{"EVAL", array("EVAL", "return redis.call('set', KEYS[1], 'ran')", "1", "q:a"), []string{busy}},
		{"EVAL_RO", array("EVAL_RO", "return 1", "0"), []string{busy}},
		{"EVALSHA", array("EVALSHA", script.SHA1([]byte(cached)), "1", "q:a"), []string{busy}},
		{"a compile", array("SCRIPT", "LOAD", "return 'new'"), []string{busy}},
		{"a cached load", array("SCRIPT", "LOAD", cached), []string{bulkSHA(cached)}},
		{"a transaction's script", array("MULTI") + array("SET", "q:a", "tx") + array("EVAL", "return 1", "0") + array("EXEC"),
			[]string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", busy}},
		{"nothing ran", array("MGET", "q:a", "q:loop"), []string{"*2\r\n$-1\r\n$-1\r\n"}},
		{"a plain write", array("SET", "q:b", "1"), []string{"+OK\r\n"}},
	} {
		c := dialRaw(t, srv.Addr())
		c.send(tc.req)
		c.expect(tc.name, tc.want)
	}
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		c := dialRaw(t, srv.Addr())
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.send(array("EVAL", "return 2", "0"))
			got[i] = c.replies(1)[0]
		}()
	}
	wg.Wait()
	for i, r := range got {
		if r != busy {
			t.Errorf("concurrent EVAL %d: %q, want %q", i, r, busy)
		}
	}
	loop.expect("the loop", []string{"-ERR Script killed: script ran longer than its time limit (limit 3s); nothing it wrote was applied\r\n"})
	after := dialRaw(t, srv.Addr())
	after.send(array("EVAL", "return 3", "0") + array("SCRIPT", "LOAD", "return 'new'"))
	after.expect("after the loop", []string{":3\r\n", bulkSHA("return 'new'")})
	runtime.KeepAlive(srv)
}

// TestScriptMaxKeysHostile: a script that writes may touch at most
// MaxScriptKeys keys in one run (its effects carry each, and every node
// applies them in one go); past it nothing it wrote is applied. A script
// that only reads has no bound; a transaction with a script counts all
// its commands' keys.
func TestScriptMaxKeysHostile(t *testing.T) {
	// A minute's time limit: the 20,000 writes take about a second alone,
	// and past 5 s on a loaded machine under the race detector; the time
	// limit is not what this test is about.
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.MaxScriptKeys = 10; c.Script.Timeout = time.Minute })
	writes := "for i = 1, tonumber(ARGV[1]) do redis.call('set', 'mk:w' .. i, 'v') end return ARGV[1]"
	reads := "local n = 0 for i = 1, tonumber(ARGV[1]) do if redis.call('get', 'mk:w' .. i) then n = n + 1 end end if ARGV[2] then redis.call('set', 'mk:r', 'v') end return n"
	over := func(n int) string {
		return fmt.Sprintf("-ERR script wrote, and touched %d keys, more than one script that writes may (limit 10, scripts.max_keys); nothing it wrote was applied\r\n", n)
	}
	for _, tc := range []struct {
		name string
		req  string
		want []string
	}{
		{"ten writes", array("EVAL", writes, "0", "10"), []string{"$2\r\n10\r\n"}},
		{"eleven writes", array("EVAL", writes, "0", "11"), []string{over(11)}},
		{"none of them applied", array("EXISTS", "mk:w11"), []string{":0\r\n"}},
		{"20 000 writes", array("EVAL", writes, "0", "20000"), []string{over(20000)}},
		{"a read-only script reads 50", array("EVAL_RO", reads, "0", "50"), []string{":10\r\n"}},
		{"a script that only reads 50", array("EVAL", reads, "0", "50"), []string{":10\r\n"}},
		{"reads 20 and writes one", array("EVAL", reads, "0", "20", "w"), []string{over(21)}},
		{"which was not applied", array("EXISTS", "mk:r"), []string{":0\r\n"}},
		{"a transaction's script and its commands", array("MULTI") + array("SET", "mk:t1", "v") + array("SET", "mk:t2", "v") + array("EVAL", writes, "0", "9") + array("EXEC"),
			[]string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "+QUEUED\r\n",
				"-EXECABORT Transaction discarded because of: it runs a script, writes, and touched 11 keys, more than one script that writes may (limit 10, scripts.max_keys); nothing was applied\r\n"}},
		{"nothing of it applied", array("EXISTS", "mk:t1", "mk:t2"), []string{":0\r\n"}},
	} {
		c := dialRaw(t, srv.Addr())
		c.send(tc.req)
		c.expect(tc.name, tc.want)
	}
}
