package resp

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/raftstore"
	"github.com/idemgate/idemgate/storeapi"
)

var _ LeaderScripts = (*raftstore.Store)(nil)

// heavyScript is short, and over MinScriptSize once compiled (a function's cost is 18 KiB: script_cost.go).
var heavyScript = strings.Repeat("local function f() end ", 100) + "return 1"

// TestScriptsOfEveryNodeTakeTurns: clients of the leader and of both
// followers run queueScript on the same keys, as a queue's producers and
// workers spread over the nodes do: every call succeeds, and each once
// (the counter is the number of calls answered, each answer a number of
// its own). Without the leader's runs (script_leader.go) a follower's
// scripts raced the leader's and lost: "ERR the keys this script read kept
// changing under it (8 runs)".
func TestScriptsOfEveryNodeTakeTurns(t *testing.T) {
	const perNode, calls = 6, 120
	tc := startPatientCluster(t)
	li := tc.rc.WaitLeader(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	keys := []string{"every:n", "every:list", "every:hash"}
	var cs []*redis.Client
	for _, node := range []int{li, (li + 1) % 3, (li + 2) % 3} {
		for range perNode {
			cs = append(cs, client(t, tc.addrs[node], patient, func(o *redis.Options) { o.PoolSize = 1 }))
		}
	}
	runQueueScripts(ctx, t, cs, calls, keys)
	total := len(cs) * calls
	if n, err := client(t, tc.addrs[li]).Get(ctx, keys[0]).Int(); err != nil || n != total {
		t.Fatalf("the counter is %d (%v), want the %d calls answered", n, err, total)
	}
}

// TestLeaderScriptHostile: scripts a follower hands to the leader, each
// with the exact answer its client gets, and what it left applied.
func TestLeaderScriptHostile(t *testing.T) {
	tc := startClusterWith(t, nil, func(c *Config) {
		c.Auth = authOf(map[string]Grant{"app-secret": {Name: "app", Write: true}, "read-secret": {Name: "reader"}})
		c.MaxScriptSize = MinScriptSize
	})
	li := tc.rc.WaitLeader(10 * time.Second)
	fi := (li + 1) % 3
	ctx := ctxT(t, 60*time.Second)
	app := func(o *redis.Options) { o.Username, o.Password = "app", "app-secret" }
	leader := client(t, tc.addrs[li], app)
	follower := client(t, tc.addrs[fi], app)
	reader := client(t, tc.addrs[fi], func(o *redis.Options) { o.Username, o.Password = "reader", "read-secret" })

	t.Run("an error after a write: the error, the write kept", func(t *testing.T) {
		_, err := follower.Eval(ctx, `redis.call("INCR", KEYS[1]) return redis.error_reply("MYERR stopped")`, []string{"h:err"}).Result()
		if err == nil || err.Error() != "MYERR stopped" {
			t.Fatalf("EVAL = %v, want MYERR stopped", err)
		}
		if n, err := leader.Get(ctx, "h:err").Int(); err != nil || n != 1 {
			t.Fatalf("h:err = %d, %v; want 1 (kept once, as Redis keeps it)", n, err)
		}
	})
	t.Run("a runtime error", func(t *testing.T) {
		_, err := follower.Eval(ctx, `redis.call("SET", KEYS[1], "x") return redis.call("INCR", KEYS[1])`, []string{"h:rt"}).Result()
		if err == nil || !strings.HasPrefix(err.Error(), "ERR value is not an integer or out of range") {
			t.Fatalf("EVAL = %v, want ERR value is not an integer …", err)
		}
	})
	t.Run("a script over scripts.max_size is refused where it is sent", func(t *testing.T) {
		_, err := follower.Eval(ctx, heavyScript, []string{"h:big"}).Result()
		if err == nil || !strings.HasPrefix(err.Error(), "ERR script too large") {
			t.Fatalf("EVAL of 100 functions = %v, want ERR script too large", err)
		}
	})
	t.Run("an unknown SHA-1 is NOSCRIPT, one only the follower knows runs", func(t *testing.T) {
		_, err := follower.EvalSha(ctx, strings.Repeat("ab", 20), []string{"h:sha"}).Result()
		if err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
			t.Fatalf("EVALSHA of an unknown SHA-1 = %v, want NOSCRIPT", err)
		}
		sha, err := follower.ScriptLoad(ctx, `return redis.call("INCRBY", KEYS[1], ARGV[1])`).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ex, err := leader.ScriptExists(ctx, sha).Result(); err != nil || ex[0] {
			t.Fatalf("SCRIPT EXISTS on the leader = %v, %v; want false", ex, err)
		}
		if n, err := follower.EvalSha(ctx, sha, []string{"h:sha"}, 5).Int(); err != nil || n != 5 {
			t.Fatalf("EVALSHA on the follower = %d, %v; want 5", n, err)
		}
	})
	t.Run("a read-only token gains no writes on the leader", func(t *testing.T) {
		_, err := reader.Eval(ctx, `return redis.call("SET", KEYS[1], "x")`, []string{"h:ro"}).Result()
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM User reader has no permissions to run the 'set' command script: ") {
			t.Fatalf("a reader's writing EVAL = %v, want NOPERM", err)
		}
		if err := leader.Get(ctx, "h:ro").Err(); err != redis.Nil {
			t.Fatalf("h:ro = %v, want nil", err)
		}
	})
	resp3 := func(t *testing.T) *rawConn {
		c := dialRaw(t, tc.addrs[fi])
		c.send("HELLO 3 AUTH app app-secret\r\n")
		c.replies(1)
		return c
	}
	t.Run("RESP3 and the keyspace travel with the script", func(t *testing.T) {
		c := resp3(t)
		c.send("SELECT 3\r\n")
		c.expect("SELECT 3", []string{"+OK\r\n"})
		c.send("EVAL \"redis.setresp(3) redis.call('SET', KEYS[1], 'v') return {double=1.5}\" 1 h:db\r\n")
		c.expect("EVAL", []string{",1.5\r\n"})
		if err := leader.Get(ctx, "h:db").Err(); err != redis.Nil {
			t.Fatalf("h:db in keyspace 0 = %v, want nil", err)
		}
		l3 := client(t, tc.addrs[li], app, func(o *redis.Options) { o.DB = 3 })
		if v, err := l3.Get(ctx, "h:db").Result(); err != nil || v != "v" {
			t.Fatalf("h:db in keyspace 3 = %q, %v; want v", v, err)
		}
	})
	t.Run("a tracking client of the follower is told of the script's key", func(t *testing.T) {
		c := resp3(t)
		c.send("CLIENT TRACKING ON\r\n")
		c.expect("CLIENT TRACKING ON", []string{"+OK\r\n"})
		// It writes a key it does not name, whose invalidation would race
		// its reply.
		c.send("EVAL \"redis.call('INCR', 'h:tcount') return redis.call('GET', KEYS[1])\" 1 h:tracked\r\n")
		c.expect("EVAL", []string{"_\r\n"})
		if err := leader.Set(ctx, "h:tracked", "new", 0).Err(); err != nil {
			t.Fatal(err)
		}
		c.expect("a write of h:tracked", []string{">2\r\n$10\r\ninvalidate\r\n*1\r\n$9\r\nh:tracked\r\n"})
	})
	t.Run("malformed requests run nothing", func(t *testing.T) {
		srv := tc.srv[li]
		good := (&scriptRequest{id: storeapi.NewRequestID(), proto: 2, body: []byte(`return redis.call("INCR", KEYS[1])`), keys: [][]byte{[]byte("h:direct")}}).encode()
		if r, err := srv.runLeaderScript(good, 1, 1<<20); err != nil || string(r) != ":1\r\n" {
			t.Fatalf("a well-formed request = %q, %v; want :1", r, err)
		}
		for _, bad := range []struct {
			name string
			req  []byte
		}{
			{"empty", nil},
			{"another version", append([]byte{9}, good[1:]...)},
			{"unknown flags", append([]byte{1, 0x80}, good[2:]...)},
			{"unknown flag 5", append([]byte{1, 0x20}, good[2:]...)},
			{"truncated", good[:len(good)-1]},
			{"trailing bytes", append(slices.Clone(good), 0)},
			{"keyspace 16", (&scriptRequest{proto: 2, db: 16, body: []byte("return 1")}).encode()},
			{"no id", []byte{1, 0, 0, 0}},
			{"a count past the end", append(append([]byte{1, 0}, make([]byte, 16)...), 0, 0, 0, 8)},
		} {
			if r, err := srv.runLeaderScript(bad.req, 1, 1<<20); err == nil {
				t.Errorf("%s: answered %q, want an error", bad.name, r)
			}
		}
		if n, err := leader.Get(ctx, "h:direct").Int(); err != nil || n != 1 {
			t.Fatalf("h:direct = %d, %v; want 1", n, err)
		}
		// The same script sent again (its first answer lost with a
		// leader): its first attempt was applied, so it is not run, and
		// its reply is the unknown outcome's.
		if r, err := srv.runLeaderScript(good, 2, 1<<20); err != nil || string(r) != "-ERR timeout: the command may or may not have been applied\r\n" {
			t.Fatalf("a second attempt of an applied script = %q, %v; want the unknown outcome", r, err)
		}
		// Another, whose first attempt never reached the log: it runs.
		other := (&scriptRequest{id: storeapi.NewRequestID(), proto: 2, body: []byte(`return redis.call("INCR", KEYS[1])`), keys: [][]byte{[]byte("h:direct")}}).encode()
		if r, err := srv.runLeaderScript(other, 3, 1<<20); err != nil || string(r) != ":2\r\n" {
			t.Fatalf("a third attempt of a script never applied = %q, %v; want :2", r, err)
		}
		big := (&scriptRequest{proto: 2, body: []byte("return string.rep('x', 100000)")}).encode()
		if r, err := srv.runLeaderScript(big, 1, 1000); err != nil || !strings.HasPrefix(string(r), "-ERR this script ran on the leader, and its reply of 100011 bytes is over") {
			t.Fatalf("a reply over the bound = %.80q, %v", r, err)
		}
		huge := (&scriptRequest{proto: 2, body: []byte(heavyScript)}).encode()
		if r, err := srv.runLeaderScript(huge, 1, 1<<20); err != nil || !strings.HasPrefix(string(r), "-ERR script too large") {
			t.Fatalf("a body over scripts.max_size = %.80q, %v", r, err)
		}
		// A tracking client's request: the reply says first whether the
		// script called a read command (1) or not (0).
		for _, tt := range []struct{ body, want string }{
			{`return redis.call("GET", KEYS[1])`, "\x01$1\r\n2\r\n"},
			{`redis.call("SET", KEYS[1] .. "x", "y") return redis.call("PING")`, "\x00+PONG\r\n"},
			{`return string.rep('x', 100000)`, "\x00-ERR this script ran on the leader, and its reply of 100011 bytes is over what a node forwards back (999 bytes)"},
		} {
			req := (&scriptRequest{id: storeapi.NewRequestID(), proto: 2, reads: true, body: []byte(tt.body), keys: [][]byte{[]byte("h:direct")}}).encode()
			if r, err := srv.runLeaderScript(req, 1, 1000); err != nil || !strings.HasPrefix(string(r), tt.want) {
				t.Errorf("%s, its reads asked = %q, %v; want %q", tt.body, r, err, tt.want)
			}
		}
		ro := (&scriptRequest{proto: 2, session: true, grant: Grant{Name: "reader"}, body: []byte(`return redis.call("SET", KEYS[1], "x")`), keys: [][]byte{[]byte("h:ro2")}}).encode()
		if r, err := srv.runLeaderScript(ro, 1, 1<<20); err != nil || !strings.HasPrefix(string(r), "-NOPERM User reader has no permissions to run the 'set' command script: ") {
			t.Fatalf("a reader's forwarded write = %q, %v; want NOPERM", r, err)
		}
	})
}

// TestLeaderScriptLeaderKilled: a script a follower handed to the leader
// is mid-run when the leader is killed: the follower sends it again to the
// next leader, which finds its first attempt never applied and runs it.
// Its client is answered the script's reply, or the unknown outcome (or,
// on a machine too slow for its spin, the time limit's stop); the
// script's write is applied once, or (with the unknown outcome) at most
// once, never twice.
func TestLeaderScriptLeaderKilled(t *testing.T) {
	tc := startCluster(t, nil)
	li := tc.rc.WaitLeader(10 * time.Second)
	fi := (li + 1) % 3
	ctx := ctxT(t, 120*time.Second)
	follower := client(t, tc.addrs[fi], func(o *redis.Options) { o.ReadTimeout = 60 * time.Second })
	// It spins a while (a second or two) before it writes: the kill comes
	// mid-run.
	const slow = `for i = 1, tonumber(ARGV[1]) do end return redis.call("INCR", KEYS[1])`
	spins := 20_000_000
	if raceDetector {
		spins /= 8 // as long, run about eight times slower
	}
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := follower.Eval(ctx, slow, []string{"killed:n"}, spins).Int64()
		done <- result{n, err}
	}()
	testsupport.WaitFor(t, "the script running on the leader", 10*time.Second, func() bool { return len(tc.srv[li].runs.ch) > 0 })
	tc.srv[li].Close()
	tc.rc.Stop(li)
	answer := <-done
	ni := tc.rc.WaitLeader(30 * time.Second)
	n, err := client(t, tc.addrs[ni]).Get(ctx, "killed:n").Int64()
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	switch {
	case answer.err == nil && (answer.n != 1 || n != 1):
		t.Fatalf("the script answered %d, and killed:n is %d; want 1 and 1", answer.n, n)
	case answer.err != nil && strings.HasPrefix(answer.err.Error(), "ERR Script killed: script ran longer than its time limit") && n != 0:
		t.Fatalf("the script was stopped by its limit, and killed:n is %d; want 0", n)
	case answer.err != nil && strings.HasPrefix(answer.err.Error(), "ERR Script killed: script ran longer than its time limit"):
		// a slow machine: its run on the next leader took longer than
		// its limit, and nothing of it was applied
	case answer.err != nil && !strings.HasPrefix(answer.err.Error(), "ERR timeout: the command may or may not have been applied"):
		t.Fatalf("the script's answer = %v, want its reply or the unknown outcome", answer.err)
	case n > 1:
		t.Fatalf("killed:n = %d: the script was applied %d times", n, n)
	}
	t.Logf("answered %d, %v; applied %d time(s)", answer.n, answer.err, n)
}

// FuzzScriptRequest: a forwarded script's request, whatever its bytes, is
// read or refused, never a panic, never more keys and arguments than the
// bound; what encode wrote reads back as it was.
func FuzzScriptRequest(f *testing.F) {
	good := &scriptRequest{id: storeapi.NewRequestID(), proto: 3, db: 2, budget: 1500 * time.Millisecond, session: true, grant: Grant{Name: "app", Write: true},
		body: []byte("return 1"), keys: [][]byte{[]byte("k")}, argv: [][]byte{[]byte("a"), {}}}
	f.Add(good.encode())
	f.Add(append([]byte{1, 0}, make([]byte, 16+6)...))
	f.Add([]byte{1, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeScriptRequest(data, 8)
		if err != nil {
			return
		}
		if len(r.keys)+len(r.argv) > 8 || r.db < 0 || r.db >= 16 {
			t.Fatalf("read %d keys, %d arguments, keyspace %d: over the bounds", len(r.keys), len(r.argv), r.db)
		}
		again, err := decodeScriptRequest(r.encode(), 8)
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("encode then decode = %+v, %v; want %+v", again, err, r)
		}
	})
}

// olderLeader stands for a leader of an earlier build, which knows no
// flags bit 4 (scriptFlagReads): it refuses such a request as malformed,
// nothing run, and answers the others as the script would.
type olderLeader struct {
	LeaderScripts
	mu   sync.Mutex
	sent []byte // each request's flags
}

func (o *olderLeader) LeaderScript(_ context.Context, req []byte) ([]byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sent = append(o.sent, req[1])
	if req[1]&scriptFlagReads != 0 {
		return nil, fmt.Errorf("%w: a forwarded script's request is malformed", command.ErrBadCommand)
	}
	return []byte(":1\r\n"), nil
}

// followerOf is a store whose node follows another.
type followerOf struct{ *memstore.Store }

func (followerOf) Leader() (id, raftAddr string) { return "elsewhere", "127.0.0.1:1" }

// TestLeaderScriptReadsFallback: a tracking client's script sent to a
// leader that does not know the flag is sent again without it, and runs
// once; its keys stay remembered (read or not), so a write of one is
// pushed.
func TestLeaderScriptReadsFallback(t *testing.T) {
	srv := startServer(t, followerOf{memstore.New(t)}, "mem", nil)
	older := &olderLeader{}
	srv.leaders = older // before any connection: the listener reads it per script
	c := dialRaw(t, srv.Addr())
	c.send("HELLO 3\r\nCLIENT TRACKING ON\r\n")
	c.replies(2)
	c.send("EVAL \"return 1\" 1 fb:k\r\n")
	c.expect("EVAL", []string{":1\r\n"})
	if want := []byte{scriptFlagRESP3 | scriptFlagReads, scriptFlagRESP3}; !slices.Equal(older.sent, want) {
		t.Fatalf("flags sent = %v, want %v (with bit 4, then without)", older.sent, want)
	}
	w := dialRaw(t, srv.Addr())
	w.send("SET fb:k 1\r\n")
	w.expect("SET", []string{"+OK\r\n"})
	c.expect("the write of a key of the script", []string{pushOf("fb:k")})
}
