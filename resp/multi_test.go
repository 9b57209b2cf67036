package resp

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgate/idemgate/internal/memstore"
)

// TestMultiAppliesNothing: what a client sends between MULTI and EXEC is
// never applied, since idemgate cannot apply it together. Each reply is
// Redis's for a transaction whose commands could not be queued (checked
// against redis-server 7.0.15 where Redis has the case), and the keys are
// unchanged after it; the connection serves normally after EXEC or
// DISCARD.
func TestMultiAppliesNothing(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", nil)
	notRun := "-" + msgNotQueued + "\r\n"
	abort := "-EXECABORT Transaction discarded because of previous errors.\r\n"
	tests := []struct {
		name    string
		send    []string // each sent after the replies of the one before
		replies [][]string
		closes  bool
	}{
		{"the issue's transaction", []string{"SET txk 5\r\nMULTI\r\nSET txk 1\r\nINCR txk\r\nEXEC\r\nGET txk\r\n"},
			[][]string{{"+OK\r\n", "+OK\r\n", notRun, notRun, abort, "$1\r\n5\r\n"}}, false},
		{"WATCH before it", []string{"WATCH txk\r\nMULTI\r\nDEL txk\r\nSETNX txk 2\r\nEXEC\r\nGET txk\r\n"},
			[][]string{{"-ERR WATCH is not supported by idemgate: each command is atomic on its own; use SET NX, SET ... GET, GETDEL, INCR or IDEM.CONSUME for atomic steps\r\n",
				"+OK\r\n", notRun, notRun, abort, "$1\r\n5\r\n"}}, false},
		{"one command per round trip", []string{"MULTI\r\n", "SET txk 9\r\n", "PEXPIRE txk 1\r\n", "EXEC\r\n", "GET txk\r\n"},
			[][]string{{"+OK\r\n"}, {notRun}, {notRun}, {abort}, {"$1\r\n5\r\n"}}, false},
		{"DISCARD", []string{"MULTI\r\nGETDEL txk\r\nDISCARD\r\nGET txk\r\nDISCARD\r\n"},
			[][]string{{"+OK\r\n", notRun, "+OK\r\n", "$1\r\n5\r\n", "-ERR DISCARD without MULTI\r\n"}}, false},
		{"reads are not run either", []string{"MULTI\r\nGET txk\r\nPING\r\nEXEC\r\n"},
			[][]string{{"+OK\r\n", notRun, notRun, abort}}, false},
		{"empty transaction", []string{"MULTI\r\nEXEC\r\nEXEC\r\n"},
			[][]string{{"+OK\r\n", "*0\r\n", "-ERR EXEC without MULTI\r\n"}}, false},
		{"nested MULTI and WATCH inside", []string{"MULTI\r\nMULTI\r\nWATCH txk\r\nEXEC\r\n"},
			[][]string{{"+OK\r\n", "-ERR MULTI calls can not be nested\r\n", "-ERR WATCH inside MULTI is not allowed\r\n", "*0\r\n"}}, false},
		{"own errors inside", []string{"MULTI\r\nFOO\r\nGET a b\r\nEVAL x 0\r\nDISCARD x\r\nSET txk 1\r\nEXEC x\r\nEXEC\r\nGET txk\r\n"},
			[][]string{{"+OK\r\n", "-ERR unknown command 'FOO', with args beginning with: \r\n",
				"-ERR wrong number of arguments for 'get' command\r\n",
				notRun, "-ERR wrong number of arguments for 'discard' command\r\n", notRun,
				"-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n",
				"-ERR EXEC without MULTI\r\n", "$1\r\n5\r\n"}}, false},
		{"MULTI with an argument opens nothing", []string{"MULTI x\r\nINCR txk\r\nDECR txk\r\n"},
			[][]string{{"-ERR wrong number of arguments for 'multi' command\r\n", ":6\r\n", ":5\r\n"}}, false},
		{"writes around it run", []string{"SET txa 1\r\nMULTI\r\nSET txa 2\r\nEXEC\r\nGET txa\r\nSET txa 3\r\nGET txa\r\n"},
			[][]string{{"+OK\r\n", "+OK\r\n", notRun, abort, "$1\r\n1\r\n", "+OK\r\n", "$1\r\n3\r\n"}}, false},
		{"QUIT inside", []string{"MULTI\r\nSET txk 1\r\nQUIT\r\nSET txk 2\r\n"},
			[][]string{{"+OK\r\n", notRun, "+OK\r\n"}}, true},
		{"closed inside", []string{"MULTI\r\nSET txk 1\r\n"}, [][]string{{"+OK\r\n", notRun}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, srv.Addr())
			for i, s := range tt.send {
				c.send(s)
				c.expect(s, tt.replies[i])
			}
			if tt.closes {
				c.nc.Close()
			}
			if r := ask(t, srv.Addr(), "GET txk\r\n"); r != "$1\r\n5\r\n" {
				t.Fatalf("txk after it = %q, want 5: a command inside MULTI was applied", r)
			}
		})
	}
}

// TestGoRedisTxPipelined: go-redis's TxPipelined and Watch fail and apply
// nothing, and the connection they used reads the right replies after
// (one connection in the pool: a reply left unread would be the next
// command's), also when the transaction is larger than one read.
func TestGoRedisTxPipelined(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", nil)
	ctx := ctxT(t, 30*time.Second)
	for _, proto := range []int{2, 3} {
		c := client(t, srv.Addr(), func(o *redis.Options) { o.Protocol, o.PoolSize = proto, 1 })
		k := fmt.Sprintf("tx%d", proto)
		for _, n := range []int{1, 2000} {
			big := strings.Repeat("v", 100)
			cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, k, 10, 0)
				p.Incr(ctx, k)
				for i := 0; i < n; i++ {
					p.Set(ctx, fmt.Sprintf("%s:%d", k, i), big, 0)
				}
				return nil
			})
			if err == nil || err.Error() != "EXECABORT Transaction discarded because of previous errors." {
				t.Fatalf("resp%d: TxPipelined of %d = %v, want EXECABORT", proto, n+2, err)
			}
			for _, cmd := range cmds {
				if cmd.Err() == nil || !strings.HasPrefix(cmd.Err().Error(), "ERR not queued and not run") {
					t.Fatalf("resp%d: %v: %v, want not run", proto, cmd.Args(), cmd.Err())
				}
			}
			if n, err := c.Exists(ctx, k, k+":0", fmt.Sprintf("%s:%d", k, n-1)).Result(); err != nil || n != 0 {
				t.Fatalf("resp%d: EXISTS after a failed transaction = %d, %v; want 0", proto, n, err)
			}
			if err := c.Set(ctx, k, "after", 0).Err(); err != nil {
				t.Fatalf("resp%d: SET after it: %v", proto, err)
			}
			if v, err := c.Get(ctx, k).Result(); err != nil || v != "after" {
				t.Fatalf("resp%d: GET after it = %q, %v: the connection is out of step", proto, v, err)
			}
			c.Del(ctx, k)
		}
		called := false
		err := c.Watch(ctx, func(tx *redis.Tx) error {
			called = true
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Incr(ctx, k).Err() })
			return err
		}, k)
		if err == nil || !strings.HasPrefix(err.Error(), "ERR WATCH is not supported") || called {
			t.Fatalf("resp%d: Watch = %v (function called: %v), want WATCH refused before it", proto, err, called)
		}
		if n, err := c.Exists(ctx, k).Result(); err != nil || n != 0 {
			t.Fatalf("resp%d: the key after Watch: %d, %v", proto, n, err)
		}
	}
}

// TestRedisPyPipeline: redis-py's default pipeline (a transaction) raises
// and applies nothing, with and without WATCH, and its connection serves
// the commands after it. Debian's python3-redis; without it the test skips,
// except under CI (.ci/run installs it).
func TestRedisPyPipeline(t *testing.T) {
	py := pythonWithRedis(t)
	srv := startServer(t, memstore.New(t), "mem", nil)
	_, port, _ := strings.Cut(srv.Addr(), ":")
	script := `
import sys, redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]), socket_timeout=10)
r.set("py:k", 1)
p = r.pipeline()
p.set("py:k", 10).incr("py:k").set("py:other", "x")
try:
    print("executed", p.execute())
except redis.exceptions.ResponseError as e:
    print("raised", type(e).__name__, str(e).split(":")[0])
print("get", r.get("py:k"), r.exists("py:other"))
with r.pipeline() as p:
    try:
        p.watch("py:k")
        p.multi()
        p.incr("py:k")
        print("executed", p.execute())
    except redis.exceptions.ResponseError as e:
        print("raised", type(e).__name__, str(e)[:30])
print("get", r.get("py:k"))
r.incr("py:k")
print("get", r.get("py:k"))
`
	out, err := exec.Command(py, "-c", script, port).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-py: %v\n%s", err, out)
	}
	want := "raised ResponseError Command # 1 (SET py\n" +
		"get b'1' 0\n" +
		"raised ResponseError WATCH is not supported by idem\n" +
		"get b'1'\n" +
		"get b'2'\n"
	if string(out) != want {
		t.Fatalf("redis-py printed\n%s\nwant\n%s", out, want)
	}
}

// pythonWithRedis is a python3 that imports redis (Debian's python3-redis
// is /usr/bin/python3's); the test skips without one, but fails under CI.
func pythonWithRedis(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(py); err == nil && exec.Command(path, "-c", "import redis").Run() == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no python3 with the redis module (.ci/run installs python3-redis)")
	}
	t.Skip("no python3 with the redis module (apt-get install python3-redis)")
	return ""
}
