package resp

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redis/redis_rate/v10"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// scriptStreams are command streams whose replies must be Redis's, byte
// for byte: each stream runs on a fresh connection, in order, against
// redis-server and a 3-node cluster's follower. Keys are the streams' own.
var scriptStreams = [][][]string{
	{ // the older string commands from a script
		{"EVAL", "return redis.call('getset', KEYS[1], 'a')", "1", "sd:gs"},
		{"EVAL", "return redis.call('getset', KEYS[1], 'b')", "1", "sd:gs"},
		{"EVAL", "return {redis.call('setex', KEYS[1], 100, 'c'), redis.call('ttl', KEYS[1])}", "1", "sd:gs"},
		{"EVAL", "return redis.pcall('setex', KEYS[1], 0, 'c')", "1", "sd:gs"},
		{"EVAL", "return {redis.call('psetex', KEYS[1], 100000, 'd'), redis.call('ttl', KEYS[1])}", "1", "sd:gs"},
		{"EVAL", "return {redis.call('mset', KEYS[1], 'x', KEYS[2], 'y'), redis.call('mget', KEYS[1], KEYS[2])}", "2", "sd:m1", "sd:m2"},
		{"EVAL", "return redis.pcall('mset', KEYS[1])", "1", "sd:m1"},
		{"EVAL", "return {redis.call('append', KEYS[1], 'ab'), redis.call('setrange', KEYS[1], 4, 'z'), redis.call('get', KEYS[1])}", "1", "sd:ap"},
		{"EVAL", "return redis.pcall('setrange', KEYS[1], -1, 'z')", "1", "sd:ap"},
		{"EVAL", "return {redis.call('incrbyfloat', KEYS[1], '0.1'), redis.call('incrbyfloat', KEYS[1], '0.2')}", "1", "sd:fl"},
		{"EVAL", "return redis.pcall('incrbyfloat', KEYS[1], 'inf')", "1", "sd:fl"},
		{"EVAL", "return redis.pcall('incrbyfloat', KEYS[1], 'x')", "1", "sd:fl"},
		{"EVAL", "redis.call('set', KEYS[1], 'w') return redis.pcall('incrbyfloat', KEYS[1], '1')", "1", "sd:fl"},
	},
	{ // conversions both ways
		{"EVAL", "return {false, true, {ok='x'}, {err='e'}}", "0"},
		{"EVAL", "return {1, {2, {3}}, 'a'}", "0"},
		{"EVAL", "return {1,2,3.7,'x',nil,4}", "0"},
		{"EVAL", "return 3.99", "0"}, {"EVAL", "return -3.99", "0"}, {"EVAL", "return 1e20", "0"}, {"EVAL", "return 0/0", "0"},
		{"EVAL", "return nil", "0"}, {"EVAL", "return", "0"}, {"EVAL", "return {}", "0"},
		{"EVAL", "return {ok=5}", "0"}, {"EVAL", "return {err=5}", "0"},
		{"EVAL", "return redis.status_reply('FINE')", "0"}, {"EVAL", "return redis.status_reply('')", "0"},
		{"EVAL", "return redis.error_reply('My Error')", "0"}, {"EVAL", "return redis.error_reply('no_space')", "0"},
		{"EVAL", "return redis.error_reply('-FOO bar baz')", "0"}, {"EVAL", "return {err='-FOO bar'}", "0"},
		{"EVAL", "return KEYS[1]..ARGV[1]..#KEYS..#ARGV", "1", "sd:a", "b", "c"},
		{"EVAL", "return redis.sha1hex('')", "0"},
		{"EVAL", "return tostring(1/3)", "0"},
	},
	{ // commands' replies as Lua sees them
		{"EVAL", "return redis.call('get', KEYS[1])", "1", "sd:none"},
		{"EVAL", "return type(redis.call('get', KEYS[1]))", "1", "sd:none"},
		{"EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "sd:k"},
		{"EVAL", "return redis.call('set', KEYS[1], 'v').ok", "1", "sd:k"},
		{"EVAL", "return redis.call('set', KEYS[1], 'w', 'NX')", "1", "sd:k"},
		{"EVAL", "return redis.call('set', KEYS[1], 'w', 'XX', 'GET')", "1", "sd:k"},
		{"EVAL", "return redis.call('set', KEYS[1], 1.5)", "1", "sd:n"},
		{"GET", "sd:n"},
		{"EVAL", "return {redis.call('incrby', KEYS[1], 5), redis.call('decr', KEYS[1]), redis.call('incr', KEYS[1])}", "1", "sd:c"},
		{"EVAL", "return {redis.call('pexpire', KEYS[1], 100000), redis.call('ttl', KEYS[1]), redis.call('persist', KEYS[1]), redis.call('pttl', KEYS[1])}", "1", "sd:c"},
		{"EVAL", "return {redis.call('exists', KEYS[1], KEYS[2]), redis.call('mget', KEYS[1], KEYS[2])}", "2", "sd:c", "sd:none"},
		{"EVAL", "return {redis.call('getdel', KEYS[1]), redis.call('del', KEYS[1]), redis.call('setnx', KEYS[1], 'x'), redis.call('setnx', KEYS[1], 'y')}", "1", "sd:c"},
		{"EVAL", "return redis.call('pexpireat', KEYS[1], 1)", "1", "sd:c"},
		{"EXISTS", "sd:c"},
		{"SET", "sd:x1", "1"}, {"SET", "sd:x2", "1"},
		{"PEXPIREAT", "sd:x1", "-5"}, {"EXPIREAT", "sd:x2", "-4000000000"}, {"EXISTS", "sd:x1", "sd:x2"},
		{"EXPIREAT", "sd:k", "9223372036854775807"},
		{"EXPIREAT", "sd:k", "-9223372036854775808"}, {"EXPIREAT", "sd:k", "x"}, {"EXPIREAT", "sd:k", "1", "BOGUS"},
		{"EXPIREAT", "sd:none", "4102444800", "NX", "XX"}, {"EXPIREAT", "sd:none", "4102444800"},
		{"EVAL", "return redis.call('expireat', KEYS[1], 4102444800)", "1", "sd:k"},
		{"TTL", "sd:k"},
		{"EVAL", "return #redis.call('time')", "0"},
		{"EVAL", "return redis.call('ping')", "0"},
		{"SET", "sd:r", "Hello World"},
		{"EVAL", "return {redis.call('getrange', KEYS[1], 0, 4), redis.call('getrange', KEYS[1], -5, -1), redis.call('getrange', KEYS[1], -1, -5), redis.call('getrange', KEYS[1], 5, 100), redis.call('getrange', KEYS[1], 20, 30), redis.call('getrange', KEYS[2], 0, -1), redis.call('strlen', KEYS[1]), redis.call('strlen', KEYS[2])}", "2", "sd:r", "sd:none"},
		{"GETRANGE", "sd:r", "-100", "2"}, {"GETRANGE", "sd:r", "x", "2"}, {"STRLEN", "sd:r"},
	},
	{ // errors: raised by call, returned by pcall, of the script
		{"SET", "sd:s", "abc"},
		{"EVAL", "return redis.call('incr', KEYS[1])", "1", "sd:s"},
		{"EVAL", "return redis.pcall('incr', KEYS[1])", "1", "sd:s"},
		{"EVAL", "local r = redis.pcall('incr', KEYS[1]); return r.err", "1", "sd:s"},
		{"EVAL", "return redis.call('set', KEYS[1])", "1", "sd:s"},
		{"EVAL", "return redis.call('set', KEYS[1], 'v', 'BOGUS')", "1", "sd:s"},
		{"EVAL", "return redis.call('nosuch', 'x')", "0"},
		{"EVAL", "return redis.call('subscribe', 'x')", "0"},
		{"EVAL", "return redis.call()", "0"},
		{"EVAL", "return redis.call(1)", "0"},
		{"EVAL", "return redis.call('get', {})", "0"},
		{"EVAL", "error('boom')", "0"},
		{"EVAL", "error({err='boom2'})", "0"},
		{"EVAL", "\n\nlocal x = 1\nreturn redis.call('incr', KEYS[1])", "1", "sd:s"},
		{"EVAL_RO", "return redis.call('set', KEYS[1], 'x')", "1", "sd:s"},
		{"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "sd:s"},
		{"GET", "sd:s"},
	},
	{ // a script that writes, then fails: the writes before stay
		{"EVAL", "redis.call('set', KEYS[1], '1'); redis.call('incr', KEYS[2]); return 1", "2", "sd:w1", "sd:s2"},
		{"GET", "sd:w1"},
		{"SET", "sd:s3", "x"},
		{"EVAL", "redis.call('set', KEYS[1], 'a'); redis.call('set', KEYS[2], 'b'); redis.call('incr', KEYS[3]); redis.call('set', KEYS[1], 'never')", "3", "sd:w2", "sd:w3", "sd:s3"},
		{"MGET", "sd:w2", "sd:w3"},
		{"EVAL", "redis.call('del', KEYS[1]); error('after the delete')", "1", "sd:w2"},
		{"EXISTS", "sd:w2"},
		{"EVAL", "redis.pcall('incr', KEYS[2]); redis.call('set', KEYS[1], 'kept'); return redis.call('get', KEYS[1])", "2", "sd:w4", "sd:s3"},
	},
	{ // a RESP3 client (HELLO's own reply is not compared)
		{"HELLO", "3"},
		{"EVAL", "return false", "0"}, {"EVAL", "return nil", "0"}, {"EVAL", "return true", "0"},
		{"EVAL", "return {1, false, 'x', {ok='fine'}}", "0"},
		{"EVAL", "return redis.call('get', KEYS[1])", "1", "sd:none3"},
		{"EVAL", "return {redis.call('mget', KEYS[1], KEYS[1])}", "1", "sd:none3"},
		{"EVAL", "return redis.call('incr', KEYS[1])", "1", "sd:n3"},
		{"EVAL", "return redis.pcall('set', KEYS[1])", "1", "sd:n3"},
	},
	{ // numkeys, EVALSHA, SCRIPT
		{"EVAL", "return 1", "-1"},
		{"EVAL", "return 1", "2", "a"},
		{"EVAL", "return 1", "x"},
		{"EVAL", "return 1"},
		{"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"},
		{"EVALSHA", "fff", "0"},
		{"EVALSHA", "fff", "-1"},
		{"SCRIPT", "LOAD", "return redis.call('incr', KEYS[1])"},
		{"EVALSHA", "0e3ad5bd0a7b9df5c2bc4f1b13b9e17bf6bb1ad2", "1", "sd:e"},
		{"EVALSHA", "0E3AD5BD0A7B9DF5C2BC4F1B13B9E17BF6BB1AD2", "1", "sd:e"},
		{"SCRIPT", "EXISTS", "0e3ad5bd0a7b9df5c2bc4f1b13b9e17bf6bb1ad2", "ffffffffffffffffffffffffffffffffffffffff"},
		{"EVAL", "return 'cached by eval'", "0"},
		{"EVALSHA", "e9e0f3a7c5ba1b9b5b8c3f7f34f8d8f9e3c3ef2e", "0"},
		{"SCRIPT", "FLUSH"},
		{"SCRIPT", "EXISTS", "0e3ad5bd0a7b9df5c2bc4f1b13b9e17bf6bb1ad2"},
		{"EVALSHA", "0e3ad5bd0a7b9df5c2bc4f1b13b9e17bf6bb1ad2", "1", "sd:e"},
		{"SCRIPT", "FLUSH", "bogus"},
		{"SCRIPT", "KILL"},
		{"SCRIPT", "BOGUS"},
		{"SCRIPT", "LOAD"}, {"SCRIPT", "EXISTS"}, {"SCRIPT", "FLUSH", "SYNC", "x"},
		{"EVALSHA", "fffffffffffffffffffffffffffffffffffffff", "-1"}, {"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "-1"},
		{"EVALSHA_RO", "0e3ad5bd0a7b9df5c2bc4f1b13b9e17bf6bb1ad2", "1", "sd:e"},
	},
}

// TestScriptsAgainstRedis is the differential test: every stream's
// replies from a follower of a 3-node cluster equal redis-server 7.0.15's,
// byte for byte, except a compile error's wording (gopher-lua's), checked
// by its prefix, and a TTL counted a second apart (sameRemaining).
func TestScriptsAgainstRedis(t *testing.T) {
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	follower := (tc.rc.WaitLeader(5*time.Second) + 1) % 3
	for i, stream := range scriptStreams {
		rc, ic := dialRaw(t, redisAddr), dialRaw(t, tc.addrs[follower])
		for _, cmd := range stream {
			rc.send(array(cmd...))
			ic.send(array(cmd...))
			want, got := rc.replies(1)[0], ic.replies(1)[0]
			if got != want && cmd[0] != "HELLO" && !sameRemaining(cmd[0], got, want) {
				t.Errorf("stream %d: %q:\n idemgate %q\n redis    %q", i, cmd, got, want)
			}
		}
	}
	// A compile error: Redis's prefix, gopher-lua's words after it.
	for _, addr := range []string{redisAddr, tc.addrs[follower]} {
		c := dialRaw(t, addr)
		c.send(array("EVAL", "return x(", "0"))
		if r := c.replies(1)[0]; !strings.HasPrefix(r, "-ERR Error compiling script (new function): user_script") {
			t.Errorf("%s: a compile error = %q", addr, r)
		}
	}
}

// TestScriptLibraries runs lock libraries unchanged, by their READMEs,
// against a 3-node cluster (on a follower and on the leader) and against
// redis-server: redsync (lock, extend, unlock), bsm/redislock (obtain,
// refresh, TTL, release; a second obtain refused while held),
// go-redis/redis_rate, and go-redis's Eval, EvalSha, ScriptLoad,
// ScriptExists and Script.Run.
func TestScriptLibraries(t *testing.T) {
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	for _, target := range []struct{ name, addr string }{
		{"redis-server", redisAddr}, {"follower", tc.addrs[(leader+1)%3]}, {"leader", tc.addrs[leader]},
	} {
		t.Run(target.name, func(t *testing.T) {
			ctx := ctxT(t, 60*time.Second)
			c := client(t, target.addr)
			other := client(t, target.addr)

			// redsync, as its README.
			rs := redsync.New(goredis.NewPool(c))
			mutex := rs.NewMutex("lib:redsync", redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
			if err := mutex.LockContext(ctx); err != nil {
				t.Fatalf("redsync Lock: %v", err)
			}
			if err := rs.NewMutex("lib:redsync", redsync.WithTries(1)).LockContext(ctx); err == nil {
				t.Fatal("redsync: a second Lock of a held mutex succeeded")
			}
			if ok, err := mutex.ExtendContext(ctx); !ok || err != nil {
				t.Fatalf("redsync Extend = %v, %v", ok, err)
			}
			if ok, err := mutex.UnlockContext(ctx); !ok || err != nil {
				t.Fatalf("redsync Unlock = %v, %v", ok, err)
			}
			if n, _ := other.Exists(ctx, "lib:redsync").Result(); n != 0 {
				t.Fatal("redsync: the key is still there after Unlock")
			}

			// bsm/redislock, as its README.
			locker := redislock.New(c)
			lock, err := locker.Obtain(ctx, "lib:redislock", 5*time.Second, nil)
			if err != nil {
				t.Fatalf("redislock Obtain: %v", err)
			}
			if _, err := redislock.New(other).Obtain(ctx, "lib:redislock", time.Second, nil); err != redislock.ErrNotObtained {
				t.Fatalf("redislock: a second Obtain = %v, want ErrNotObtained", err)
			}
			if err := lock.Refresh(ctx, 10*time.Second, nil); err != nil {
				t.Fatalf("redislock Refresh: %v", err)
			}
			if ttl, err := lock.TTL(ctx); err != nil || ttl <= 5*time.Second || ttl > 10*time.Second {
				t.Fatalf("redislock TTL = %v, %v; want within (5s, 10s]", ttl, err)
			}
			if err := lock.Release(ctx); err != nil {
				t.Fatalf("redislock Release: %v", err)
			}
			if err := lock.Release(ctx); err != redislock.ErrLockNotHeld {
				t.Fatalf("redislock: a second Release = %v, want ErrLockNotHeld", err)
			}

			// go-redis/redis_rate (GCRA in a script: TIME, GET, SET EX of a
			// float), as its README: two a minute, the third refused.
			limiter := redis_rate.NewLimiter(c)
			for i, want := range []int{1, 1, 0} {
				res, err := limiter.Allow(ctx, "lib:rate:"+target.name, redis_rate.PerMinute(2))
				if err != nil || res.Allowed != want || res.Remaining != max(1-i, 0) {
					t.Fatalf("redis_rate Allow %d = %+v, %v; want allowed %d", i+1, res, err, want)
				}
			}

			// go-redis's scripting API.
			src := "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[1])"
			if v, err := c.Eval(ctx, src, []string{"lib:eval"}, "v1").Text(); err != nil || v != "v1" {
				t.Fatalf("Eval = %q, %v", v, err)
			}
			sha, err := c.ScriptLoad(ctx, src).Result()
			if err != nil || sha != redis.NewScript(src).Hash() {
				t.Fatalf("ScriptLoad = %q, %v", sha, err)
			}
			if ex, err := c.ScriptExists(ctx, sha, strings.Repeat("0", 40)).Result(); err != nil || !ex[0] || ex[1] {
				t.Fatalf("ScriptExists = %v, %v", ex, err)
			}
			if v, err := c.EvalSha(ctx, sha, []string{"lib:eval"}, "v2").Text(); err != nil || v != "v2" {
				t.Fatalf("EvalSha = %q, %v", v, err)
			}
			fresh := redis.NewScript(fmt.Sprintf("return redis.call('INCRBY', KEYS[1], ARGV[1]) -- %s", target.name))
			if n, err := fresh.Run(ctx, c, []string{"lib:n:" + target.name}, 5).Int64(); err != nil || n != 5 {
				t.Fatalf("Script.Run (NOSCRIPT, then EVAL) = %d, %v", n, err)
			}
			if n, err := fresh.EvalSha(ctx, c, []string{"lib:n:" + target.name}, 1).Int64(); err != nil || n != 6 {
				t.Fatalf("Script.EvalSha after Run = %d, %v", n, err)
			}
			if _, err := c.EvalRO(ctx, "return redis.call('DEL', KEYS[1])", []string{"lib:n:" + target.name}).Result(); err == nil ||
				!strings.HasPrefix(err.Error(), "ERR Write commands are not allowed from read-only scripts.") {
				t.Fatalf("EvalRO writing = %v", err)
			}
		})
	}
}

// TestRedisPyLock: redis-py's Lock (acquire, a second acquire refused,
// extend, release, a second release raising LockError), unchanged,
// against a 3-node cluster's follower and against redis-server.
func TestRedisPyLock(t *testing.T) {
	py := pythonWithRedis(t)
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	follower := tc.addrs[(tc.rc.WaitLeader(5*time.Second)+1)%3]
	script := `
import sys, redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]), socket_timeout=10)
lock = r.lock("py:lock", timeout=5)
print("acquire", lock.acquire(blocking=False))
print("second", r.lock("py:lock", timeout=5).acquire(blocking=False))
print("extend", lock.extend(5))
print("ttl", 5000 < r.pttl("py:lock") <= 10000)
print("owned", lock.owned())
lock.release()
print("exists", r.exists("py:lock"))
try:
    lock.release()
    print("released twice")
except redis.exceptions.LockError as e:
    print("raised", type(e).__name__)
`
	want := "acquire True\nsecond False\nextend True\nttl True\nowned True\nexists 0\nraised LockError\n"
	for _, addr := range []string{redisAddr, follower} {
		_, port, _ := strings.Cut(addr, ":")
		out, err := exec.Command(py, "-c", script, port).CombinedOutput()
		if err != nil || string(out) != want {
			t.Errorf("redis-py Lock against %s: %v\n%s\nwant\n%s", addr, err, out, want)
		}
	}
}
