package resp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgate/idemgate/internal/testcluster"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/locks"
	"github.com/idemgate/idemgate/once"
	"github.com/idemgate/idemgate/raftstore"
	"github.com/idemgate/idemgate/tokens"
)

// testCluster is a 3-node cluster over real TCP on loopback, real
// raft-boltdb and bbolt files, with a listener on each node.
type testCluster struct {
	rc    *testcluster.Cluster
	srv   []*Server
	addrs []string
}

func startCluster(t testing.TB, tweak func(*Config)) *testCluster {
	t.Helper()
	return startClusterWith(t, nil, tweak)
}

// startClusterWith is startCluster with nodeTweak adjusting each node's
// store config.
func startClusterWith(t testing.TB, nodeTweak func(*raftstore.Config), tweak func(*Config)) *testCluster {
	t.Helper()
	rc := testcluster.Start(t, 3, nodeTweak)
	tc := &testCluster{rc: rc}
	for i := range rc.Stores {
		tc.srv = append(tc.srv, startServer(t, rc.Stores[i], rc.Cfgs[i].NodeID, tweak))
		tc.addrs = append(tc.addrs, tc.srv[i].Addr())
	}
	return tc
}

// startServer serves store on a free loopback port until the test ends.
func startServer(t testing.TB, store Store, id string, tweak func(*Config)) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addr, cfg.NodeID = "127.0.0.1:0", id
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if tweak != nil {
		tweak(&cfg)
	}
	var onceSvc Once
	if os, ok := store.(once.Store); ok { // the real stores; a wrapper of one in a test has none
		onceSvc = once.New(os, func(string) time.Duration { return time.Hour })
	}
	var lockSvc Locks
	if ls, ok := store.(locks.Store); ok {
		svc, err := locks.New(ls, locks.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		lockSvc = svc
	}
	srv, err := New(cfg, store, tokens.New(tokStore{store}, time.Minute), onceSvc, lockSvc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv
}

// tokStore is the token half of a store, for tokens.New.
type tokStore struct{ s Store }

func (t tokStore) IssueToken(ctx context.Context, key []byte, ttl time.Duration) (time.Time, error) {
	return t.s.(tokens.Store).IssueToken(ctx, key, ttl)
}

func (t tokStore) ConsumeToken(ctx context.Context, key []byte) error {
	return t.s.(tokens.Store).ConsumeToken(ctx, key)
}

// client is a go-redis client of addr that never retries on its own: a
// retried write would hide what the listener answered.
func client(t *testing.T, addr string, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 5 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// startPatientCluster is startCluster for a test that checks what long
// runs of commands answer (a pipeline of hundreds of writes, whole scans
// of hundreds of calls), never how fast: on a busy machine (a core kept
// busy, the other packages' tests beside it, the race detector) one commit
// or read barrier can take seconds, and the run as a whole far longer than
// a bound meant for one request. Each step is still bounded, by a minute
// (the listener's OpTimeout, the store's ApplyTimeout): longer than that
// is a cluster that is stuck, not slow. A run of steps has no bound of its
// own but go test's -timeout; its clients take patient. Raft's timeouts
// are hashicorp/raft's defaults doubled rather than the test clusters'
// loopback ones (a 200 ms leader lease): a leader starved of the CPU for a
// moment would step down, and a node without a leader answers at once
// that there is none (CLUSTERDOWN, or ERR timeout for a write that may
// have been applied) instead of a pipeline's next reply.
func startPatientCluster(t *testing.T) *testCluster {
	t.Helper()
	return startClusterWith(t, func(c *raftstore.Config) {
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 2*time.Second, 2*time.Second, time.Second
		c.ApplyTimeout = time.Minute
	}, func(c *Config) { c.OpTimeout = time.Minute })
}

// patient is a client option for startPatientCluster's tests: a reply
// may take as long as the step behind it (go-redis reads all of a
// pipeline's replies under one deadline, which would bound the whole run).
func patient(o *redis.Options) { o.ReadTimeout = -1 }

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestGoRedisEveryCommand runs every command through go-redis (RESP3, and
// RESP2 for the reply shapes that differ) against a follower and the leader
// of a 3-node cluster: a write on one node is read on the other at once.
func TestGoRedisEveryCommand(t *testing.T) {
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprint("resp", proto), func(t *testing.T) {
			ctx := ctxT(t, 60*time.Second)
			w := client(t, tc.addrs[(leader+1)%3], func(o *redis.Options) { o.Protocol = proto })
			r := client(t, tc.addrs[leader], func(o *redis.Options) { o.Protocol = proto })
			k := func(s string) string { return fmt.Sprintf("p%d:%s", proto, s) }
			c := checker{t}

			c.str("PING", r.Ping(ctx), "PONG")
			c.str("ECHO", r.Echo(ctx, "hi\r\nthere"), "hi\r\nthere")
			c.ok("SELECT 0", r.Do(ctx, "SELECT", 0).Err())
			c.fails("SELECT 16", r.Do(ctx, "SELECT", 16).Err(), "ERR DB index is out of range")
			c.ok("CLIENT SETNAME", r.Do(ctx, "CLIENT", "SETNAME", "tester").Err())
			c.str("CLIENT GETNAME", r.ClientGetName(ctx), "tester")
			id, err := r.ClientID(ctx).Result()
			c.ok("CLIENT ID", err)
			info, err := r.ClientInfo(ctx).Result()
			c.ok("CLIENT INFO", err)
			if info.Name != "tester" || info.ID != id || info.Resp != proto {
				t.Fatalf("CLIENT INFO = %+v, want name tester, id %d, resp %d", info, id, proto)
			}
			cmds, err := r.Command(ctx).Result()
			c.ok("COMMAND", err)
			if cmds["set"] == nil || cmds["get"] == nil || !cmds["get"].ReadOnly || cmds["set"].Arity != -3 {
				t.Fatalf("COMMAND: set %+v, get %+v", cmds["set"], cmds["get"])
			}
			c.int("COMMAND COUNT", r.Do(ctx, "COMMAND", "COUNT"), int64(len(cmds)))
			if s, err := r.Info(ctx, "replication").Result(); err != nil || !strings.Contains(s, "role:master") ||
				!strings.Contains(s, "idemgate_leader:"+tc.rc.Cfgs[leader].NodeID) {
				t.Fatalf("INFO replication on the leader = %q, %v", s, err)
			}
			if s, err := w.Info(ctx).Result(); err != nil || !strings.Contains(s, "role:slave") || !strings.Contains(s, "redis_version:") {
				t.Fatalf("INFO on a follower = %q, %v", s, err)
			}

			// SET and its options; every write on the follower, read on the leader.
			c.str("SET", w.Set(ctx, k("a"), "1", 0), "OK")
			c.str("GET", r.Get(ctx, k("a")), "1")
			c.boolean("SETNX on a live key", w.SetNX(ctx, k("a"), "2", 0), false)
			c.boolean("SET NX EX on a live key", w.SetNX(ctx, k("a"), "2", time.Minute), false)
			c.boolean("SET NX on a new key", w.SetNX(ctx, k("b"), "b", 0), true)
			c.boolean("SET XX on a missing key", w.SetXX(ctx, k("missing"), "x", 0), false)
			c.str("SET XX GET", w.SetArgs(ctx, k("a"), "3", redis.SetArgs{Mode: "XX", Get: true}), "1")
			c.isNil("SET GET of a new key", w.SetArgs(ctx, k("new"), "n", redis.SetArgs{Get: true}).Err(), true)
			c.str("SET NX GET of a live key", w.SetArgs(ctx, k("a"), "4", redis.SetArgs{Mode: "NX", Get: true}), "3")
			c.str("GET after them", r.Get(ctx, k("a")), "3")
			c.isNil("GET missing", r.Get(ctx, k("missing")).Err(), true)
			c.fails("SET NX XX", w.Do(ctx, "SET", k("a"), "v", "NX", "XX").Err(), "ERR syntax error")
			c.fails("SET EX 0", w.Do(ctx, "SET", k("a"), "v", "EX", 0).Err(), "ERR invalid expire time in 'set' command")
			c.fails("SET EX x", w.Do(ctx, "SET", k("a"), "v", "EX", "x").Err(), "ERR value is not an integer or out of range")
			c.fails("SET EX KEEPTTL", w.Do(ctx, "SET", k("a"), "v", "EX", 5, "KEEPTTL").Err(), "ERR syntax error")
			c.fails("SET 1 arg", w.Do(ctx, "SET", k("a")).Err(), "ERR wrong number of arguments for 'set' command")

			// Lifetimes: EX, PX, EXAT, PXAT, KEEPTTL, EXPIRE, PEXPIRE, PERSIST, TTL, PTTL.
			c.str("SET EX", w.Set(ctx, k("t"), "v", 100*time.Second), "OK")
			if d := r.TTL(ctx, k("t")).Val(); d < 99*time.Second || d > 100*time.Second {
				t.Fatalf("TTL after EX 100 = %s", d)
			}
			if d := r.PTTL(ctx, k("t")).Val(); d < 98*time.Second || d > 100*time.Second {
				t.Fatalf("PTTL after EX 100 = %s", d)
			}
			c.str("SET KEEPTTL", w.SetArgs(ctx, k("t"), "v2", redis.SetArgs{KeepTTL: true}), "OK")
			if d := r.TTL(ctx, k("t")).Val(); d < 90*time.Second {
				t.Fatalf("TTL after KEEPTTL = %s, want the lifetime kept", d)
			}
			c.str("SET without a lifetime", w.Set(ctx, k("t"), "v3", 0), "OK")
			c.int("TTL of a key without a lifetime", r.Do(ctx, "TTL", k("t")), -1)
			c.int("TTL of a missing key", r.Do(ctx, "TTL", k("missing")), -2)
			c.int("PTTL of a missing key", r.Do(ctx, "PTTL", k("missing")), -2)
			c.boolean("EXPIRE", w.Expire(ctx, k("t"), 50*time.Second), true)
			c.boolean("EXPIRE NX with a lifetime", w.ExpireNX(ctx, k("t"), 10*time.Second), false)
			c.boolean("EXPIRE GT shorter", w.ExpireGT(ctx, k("t"), 10*time.Second), false)
			c.boolean("EXPIRE LT shorter", w.ExpireLT(ctx, k("t"), 10*time.Second), true)
			c.boolean("EXPIRE missing", w.Expire(ctx, k("missing"), time.Second), false)
			c.boolean("PEXPIRE", w.PExpire(ctx, k("t"), 20*time.Second), true)
			if d := r.PTTL(ctx, k("t")).Val(); d < 19*time.Second || d > 20*time.Second {
				t.Fatalf("PTTL after PEXPIRE 20000 = %s", d)
			}
			c.boolean("PERSIST", w.Persist(ctx, k("t")), true)
			c.boolean("PERSIST again", w.Persist(ctx, k("t")), false)
			c.int("TTL after PERSIST", r.Do(ctx, "TTL", k("t")), -1)
			c.str("SET PX 300", w.Set(ctx, k("short"), "v", 300*time.Millisecond), "OK")
			c.str("SET PXAT past", w.SetArgs(ctx, k("past"), "v", redis.SetArgs{ExpireAt: time.Now().Add(-time.Hour)}), "OK")
			c.isNil("GET of a key set in the past", r.Get(ctx, k("past")).Err(), true)
			c.str("SET EXAT", w.SetArgs(ctx, k("at"), "v", redis.SetArgs{ExpireAt: time.Now().Add(time.Hour)}), "OK")
			if d := r.TTL(ctx, k("at")).Val(); d < 3590*time.Second || d > 3600*time.Second {
				t.Fatalf("TTL after EXAT +1h = %s", d)
			}
			c.boolean("EXPIRE 0 deletes", w.Expire(ctx, k("at"), 0), true)
			c.int("EXISTS after EXPIRE 0", r.Exists(ctx, k("at")), 0)
			waitGone(t, r, k("short"))
			c.int("TTL of an expired key", r.Do(ctx, "TTL", k("short")), -2)

			// Counters.
			c.int("INCR new", w.Incr(ctx, k("n")), 1)
			c.int("INCRBY", w.IncrBy(ctx, k("n"), 41), 42)
			c.int("DECR", w.Decr(ctx, k("n")), 41)
			c.int("DECRBY", w.DecrBy(ctx, k("n"), 50), -9)
			c.str("GET of a counter", r.Get(ctx, k("n")), "-9")
			c.str("SET a max counter", w.Set(ctx, k("big"), "9223372036854775807", 0), "OK")
			c.fails("INCR past the maximum", w.Incr(ctx, k("big")).Err(), "ERR increment or decrement would overflow")
			c.fails("INCR of text", w.Incr(ctx, k("b")).Err(), "ERR value is not an integer or out of range")
			c.fails("INCRBY of text", w.Do(ctx, "INCRBY", k("n"), "x").Err(), "ERR value is not an integer or out of range")

			// Many keys: MGET, EXISTS, DEL; GETDEL.
			vals, err := r.MGet(ctx, k("a"), k("missing"), k("b")).Result()
			c.ok("MGET", err)
			if len(vals) != 3 || vals[0] != "3" || vals[1] != nil || vals[2] != "b" {
				t.Fatalf("MGET = %#v", vals)
			}
			c.int("EXISTS counts repeats", r.Exists(ctx, k("a"), k("a"), k("missing"), k("b")), 3)
			c.str("GETDEL", w.GetDel(ctx, k("b")), "b")
			c.isNil("GETDEL again", w.GetDel(ctx, k("b")).Err(), true)
			c.int("DEL", w.Del(ctx, k("a"), k("n"), k("missing"), k("big")), 3)
			c.int("EXISTS after DEL", r.Exists(ctx, k("a"), k("n")), 0)

			// Form tokens.
			tok, err := w.Do(ctx, "IDEM.TOKEN", "checkout", 60).Text()
			c.ok("IDEM.TOKEN", err)
			if len(tok) != 36 {
				t.Fatalf("IDEM.TOKEN = %q, want a uuid", tok)
			}
			c.int("IDEM.CONSUME", r.Do(ctx, "IDEM.CONSUME", "checkout", tok), 1)
			c.int("IDEM.CONSUME again", w.Do(ctx, "IDEM.CONSUME", "checkout", tok), 0)
			c.fails("IDEM.TOKEN bad scope", w.Do(ctx, "IDEM.TOKEN", "no spaces").Err(), "ERR scope must be")
			c.fails("IDEM.CONSUME bad token", w.Do(ctx, "IDEM.CONSUME", "checkout", "nope").Err(), "ERR token must be a uuid")

			// A transaction, on the follower; read on the leader.
			_, err = w.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Set(ctx, k("tx"), "1", 0).Err() })
			c.ok("MULTI/EXEC", err)
			c.int("EXISTS after a transaction", r.Exists(ctx, k("tx")), 1)
			src := fmt.Sprintf("return redis.call('INCRBY', KEYS[1], ARGV[1]) -- resp%d", proto)
			incrBy := redis.NewScript(src)
			c.int("EVAL", w.Eval(ctx, src, []string{k("ev")}, 7), 7)
			c.int("EVALSHA after EVAL on that node", w.EvalSha(ctx, incrBy.Hash(), []string{k("ev")}, 1), 8)
			c.fails("EVALSHA on a node that has not seen it", r.EvalSha(ctx, incrBy.Hash(), []string{k("ev")}, 1).Err(), "NOSCRIPT No matching script. Please use EVAL.")
			c.int("Script.Run there (EVALSHA, then EVAL on NOSCRIPT)", incrBy.Run(ctx, r, []string{k("ev")}, 1), 9)

			// What is not supported says so.
			c.fails("unknown", r.Do(ctx, "FOO", "bar").Err(), "ERR unknown command 'FOO', with args beginning with: 'bar'")
			c.fails("SAVE", r.Do(ctx, "SAVE").Err(), unsupportedWhy["save"])
			c.fails("SHUTDOWN", r.Do(ctx, "SHUTDOWN", "NOSAVE").Err(), unsupportedWhy["shutdown"])
			c.fails("FCALL", r.Do(ctx, "FCALL", "f", "0").Err(), fmt.Sprintf(msgNotSupported, "FCALL"))
		})
	}
}

// waitGone waits until key has expired, as every node sees it.
func waitGone(t *testing.T, c *redis.Client, key string) {
	t.Helper()
	testsupport.WaitFor(t, key+" to expire", 10*time.Second, func() bool {
		n, err := c.Exists(context.Background(), key).Result()
		return err == nil && n == 0
	})
}

// checker states a command's expected reply in one line each.
type checker struct{ t *testing.T }

func (c checker) ok(what string, err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
}

func (c checker) str(what string, cmd interface{ Result() (string, error) }, want string) {
	c.t.Helper()
	got, err := cmd.Result()
	if err != nil || got != want {
		c.t.Fatalf("%s = %q, %v; want %q", what, got, err, want)
	}
}

// int takes a *redis.IntCmd or a *redis.Cmd (Do).
func (c checker) int(what string, cmd any, want int64) {
	c.t.Helper()
	var (
		got int64
		err error
	)
	switch x := cmd.(type) {
	case *redis.IntCmd:
		got, err = x.Result()
	case *redis.Cmd:
		got, err = x.Int64()
	default:
		c.t.Fatalf("%s: %T", what, cmd)
	}
	if err != nil || got != want {
		c.t.Fatalf("%s = %d, %v; want %d", what, got, err, want)
	}
}

func (c checker) boolean(what string, cmd interface{ Result() (bool, error) }, want bool) {
	c.t.Helper()
	got, err := cmd.Result()
	if err != nil || got != want {
		c.t.Fatalf("%s = %v, %v; want %v", what, got, err, want)
	}
}

// isNil: the reply was the null (want) or something else.
func (c checker) isNil(what string, err error, want bool) {
	c.t.Helper()
	if errors.Is(err, redis.Nil) != want || (err != nil && !errors.Is(err, redis.Nil)) {
		c.t.Fatalf("%s: err = %v, want nil reply %v", what, err, want)
	}
}

func (c checker) fails(what string, err error, want string) {
	c.t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		c.t.Fatalf("%s: err = %v, want one starting %q", what, err, want)
	}
}
