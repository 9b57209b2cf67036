package resp

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// txStep is what one connection of a differential case sends (inline
// commands, one a line, each answered once), or, with gone, a wait until
// that key has expired.
type txStep struct {
	conn int
	send string
	gone string
}

// txCases are the differential cases of transactions: {k} is a prefix of
// the case's own.
var txCases = []struct {
	name  string
	steps []txStep
}{
	{"queued reads and writes", []txStep{{0, "MULTI\r\nSET {k}a 1\r\nINCR {k}a\r\nGET {k}a\r\nMGET {k}a {k}b\r\nEXISTS {k}a {k}b {k}a\r\n" +
		"TTL {k}a\r\nPTTL {k}b\r\nSET {k}t x EX 100\r\nTTL {k}t\r\nPING\r\nECHO hi\r\nEXEC\r\nGET {k}a\r\n", ""}}},
	{"runtime errors apply the rest", []txStep{{0, "SET {k}w abc\r\nMULTI\r\nINCR {k}w\r\nSET {k}x 1\r\nSET {k}y 1 FOO\r\n" +
		"INCRBY {k}x notanumber\r\nEXPIRE {k}x 100 NX XX\r\nDECRBY {k}x -9223372036854775808\r\nSET {k}z 1 EX 0\r\nGET {k}w\r\nINCR {k}x\r\nEXEC\r\n" +
		"MGET {k}w {k}x {k}y {k}z\r\n", ""}}},
	{"queue-time errors abort", []txStep{{0, "MULTI\r\nSET {k}a 1\r\nFOO bar\r\nGET\r\nSET {k}b 2\r\nEXEC\r\nEXISTS {k}a {k}b\r\n", ""}}},
	{"arity of EXEC inside", []txStep{{0, "MULTI\r\nSET {k}a 1\r\nEXEC x\r\nEXEC\r\nEXISTS {k}a\r\n", ""}}},
	{"arity of DISCARD inside", []txStep{{0, "MULTI\r\nSET {k}a 1\r\nDISCARD x\r\nEXEC\r\nEXISTS {k}a\r\n", ""}}},
	{"DISCARD", []txStep{{0, "MULTI\r\nSET {k}a 1\r\nDISCARD\r\nEXISTS {k}a\r\nDISCARD\r\n", ""}}},
	{"EXEC without MULTI, nested MULTI", []txStep{{0, "EXEC\r\nMULTI\r\nMULTI\r\nSET {k}a 1\r\nEXEC\r\nGET {k}a\r\n", ""}}},
	{"WATCH inside MULTI", []txStep{{0, "MULTI\r\nWATCH {k}a\r\nSET {k}a 2\r\nEXEC\r\nGET {k}a\r\n", ""}}},
	{"empty transaction", []txStep{{0, "MULTI\r\nEXEC\r\nMULTI x\r\n", ""}}},
	{"pipelined blocks", []txStep{{0, "MULTI\r\nINCR {k}c\r\nEXEC\r\nMULTI\r\nINCR {k}c\r\nINCR {k}c\r\nEXEC\r\nGET {k}c\r\n" +
		"MULTI\r\nGETDEL {k}c\r\nEXEC\r\nEXISTS {k}c\r\n", ""}}},
	{"value replies", []txStep{{0, "SET {k}g v\r\nMULTI\r\nGETDEL {k}g\r\nSET {k}g w GET\r\nSET {k}g u GET\r\nSET {k}h x NX\r\n" +
		"SETNX {k}h y\r\nSET {k}h z XX GET\r\nDEL {k}g {k}h {k}none\r\nPERSIST {k}h\r\nEXEC\r\n", ""}}},
	{"connection commands run at EXEC", []txStep{{0, "MULTI\r\nCLIENT SETNAME tx1\r\nCLIENT GETNAME\r\nSELECT 0\r\nUNWATCH\r\nEXEC\r\nCLIENT GETNAME\r\n", ""}}},
	{"WATCH: a second connection writes", []txStep{
		{0, "SET {k}a 1\r\nWATCH {k}a\r\n", ""}, {1, "SET {k}a 2\r\n", ""},
		{0, "MULTI\r\nSET {k}a 3\r\nEXEC\r\nGET {k}a\r\n", ""}}},
	{"WATCH: a second connection writes another key", []txStep{
		{0, "SET {k}a 1\r\nWATCH {k}a {k}b\r\n", ""}, {1, "SET {k}c 2\r\nGET {k}a\r\n", ""},
		{0, "MULTI\r\nINCR {k}a\r\nEXEC\r\nGET {k}a\r\n", ""}}},
	{"WATCH: the same connection writes", []txStep{{0, "SET {k}a 1\r\nWATCH {k}a\r\nSET {k}a 1\r\nMULTI\r\nINCR {k}a\r\nEXEC\r\nGET {k}a\r\n", ""}}},
	{"WATCH: absent, then created", []txStep{
		{0, "WATCH {k}n\r\n", ""}, {1, "SET {k}n 1\r\n", ""}, {0, "MULTI\r\nINCR {k}n\r\nEXEC\r\nGET {k}n\r\n", ""}}},
	{"WATCH: absent, still absent", []txStep{{0, "WATCH {k}n\r\nMULTI\r\nSET {k}n 1\r\nEXEC\r\nGET {k}n\r\n", ""}}},
	{"WATCH: deleted", []txStep{{0, "SET {k}a 1\r\nWATCH {k}a\r\n", ""}, {1, "DEL {k}a\r\n", ""}, {0, "MULTI\r\nSET {k}b 1\r\nEXEC\r\nEXISTS {k}b\r\n", ""}}},
	{"WATCH: expires", []txStep{{0, "SET {k}e 1 PX 300\r\nWATCH {k}e\r\n", ""}, {1, "", "{k}e"},
		{0, "MULTI\r\nSET {k}f 1\r\nEXEC\r\nEXISTS {k}f\r\n", ""}}},
	{"WATCH: given a lifetime", []txStep{{0, "SET {k}a 1\r\nWATCH {k}a\r\n", ""}, {1, "EXPIRE {k}a 100\r\n", ""},
		{0, "MULTI\r\nSET {k}b 1\r\nEXEC\r\n", ""}}},
	{"WATCH: an expire whose condition fails", []txStep{{0, "SET {k}a 1\r\nWATCH {k}a\r\n", ""}, {1, "EXPIRE {k}a 100 XX\r\nPERSIST {k}a\r\nSET {k}a 2 NX\r\n", ""},
		{0, "MULTI\r\nSET {k}b 1\r\nEXEC\r\n", ""}}},
	{"UNWATCH", []txStep{{0, "SET {k}a 1\r\nWATCH {k}a\r\n", ""}, {1, "SET {k}a 2\r\n", ""},
		{0, "UNWATCH\r\nMULTI\r\nSET {k}a 3\r\nEXEC\r\nGET {k}a\r\n", ""}}},
	{"DISCARD unwatches", []txStep{{0, "SET {k}a 1\r\nWATCH {k}a\r\nMULTI\r\nDISCARD\r\n", ""}, {1, "SET {k}a 2\r\n", ""},
		{0, "MULTI\r\nSET {k}a 3\r\nEXEC\r\nGET {k}a\r\n", ""}}},
	{"EXEC unwatches", []txStep{{0, "SET {k}a 1\r\nWATCH {k}a\r\nMULTI\r\nEXEC\r\n", ""}, {1, "SET {k}a 2\r\n", ""},
		{0, "MULTI\r\nSET {k}a 3\r\nEXEC\r\nGET {k}a\r\n", ""}}},
	{"an aborted EXEC unwatches", []txStep{{0, "SET {k}a 1\r\nWATCH {k}a\r\nMULTI\r\nFOO\r\nEXEC\r\n", ""}, {1, "SET {k}a 2\r\n", ""},
		{0, "MULTI\r\nSET {k}a 3\r\nEXEC\r\nGET {k}a\r\n", ""}}},
	{"empty EXEC of a changed watch", []txStep{{0, "WATCH {k}a\r\n", ""}, {1, "SET {k}a 2\r\n", ""}, {0, "MULTI\r\nEXEC\r\n", ""}}},
	{"WATCH twice, the first counts", []txStep{{0, "SET {k}a 1\r\nWATCH {k}a\r\n", ""}, {1, "SET {k}a 2\r\n", ""},
		{0, "WATCH {k}a {k}a\r\nMULTI\r\nSET {k}a 3\r\nEXEC\r\nGET {k}a\r\n", ""}}},
	// Scripts queued after MULTI run at EXEC, in their place, atomically
	// with the rest.
	{"a script among the commands", []txStep{{0, "MULTI\r\nSET {k}a 1\r\nEVAL \"return redis.call('INCR', KEYS[1])\" 1 {k}a\r\n" +
		"GET {k}a\r\nEVAL \"return {KEYS[1], ARGV[1], redis.call('GET', KEYS[1])}\" 1 {k}a x\r\nEXEC\r\nGET {k}a\r\n", ""}}},
	{"a script's error mid-way keeps its writes and the rest", []txStep{{0, "MULTI\r\n" +
		"EVAL \"redis.call('SET', KEYS[1], 'w'); return redis.call('INCR', KEYS[1])\" 1 {k}a\r\nSET {k}b 2\r\n" +
		"EVAL \"return redis.error_reply('MINE no')\" 0\r\nEXEC\r\nMGET {k}a {k}b\r\n", ""}}},
	{"scripts by sha, known and not, and bad key counts", []txStep{{0, "SCRIPT LOAD \"return redis.call('INCRBY', KEYS[1], ARGV[1])\"\r\n" +
		"MULTI\r\nEVALSHA 8cd00688c05c46bde4a2e60658ef20a2e5c0b248 1 {k}c 5\r\nEVALSHA ffffffffffffffffffffffffffffffffffffffff 0\r\n" +
		"EVALSHA abc 0\r\nEVAL \"return 1\" 2 {k}x\r\nEVAL \"return 1\" -1\r\nEVAL \"return 1\" x\r\nINCR {k}c\r\nEXEC\r\nGET {k}c\r\n", ""}}},
	{"a read-only script that writes, and nil replies", []txStep{{0, "MULTI\r\nEVAL_RO \"return redis.call('SET', KEYS[1], 1)\" 1 {k}a\r\n" +
		"EVAL_RO \"return redis.call('GET', KEYS[1])\" 1 {k}a\r\nEVAL \"return nil\" 0\r\nPING\r\nEXEC\r\nEXISTS {k}a\r\n", ""}}},
	{"a script with a watched key changed", []txStep{
		{0, "SET {k}a 1\r\nWATCH {k}a\r\n", ""}, {1, "SET {k}a 2\r\n", ""},
		{0, "MULTI\r\nEVAL \"return redis.call('SET', KEYS[1], 3)\" 1 {k}a\r\nEXEC\r\nGET {k}a\r\n", ""}}},
	{"a script with a watched key unchanged", []txStep{
		{0, "SET {k}a 1\r\nWATCH {k}a\r\n", ""}, {1, "SET {k}b 2\r\n", ""},
		{0, "MULTI\r\nEVAL \"return redis.call('INCR', KEYS[1])\" 1 {k}a\r\nEXEC\r\nGET {k}a\r\n", ""}}},
	// SAVE and SHUTDOWN are never queued: refused, the transaction
	// discarded at EXEC (the errors are Redis's, though idemgate runs
	// neither command outside MULTI either).
	{"SAVE and SHUTDOWN refused inside MULTI", []txStep{{0, "MULTI\r\nSET {k}a 1\r\nSAVE\r\nEXEC\r\nEXISTS {k}a\r\n" +
		"MULTI\r\nSHUTDOWN NOSAVE\r\nINCR {k}a\r\nEXEC\r\nEXISTS {k}a\r\n", ""}}},
	{"a script and a queue-time error", []txStep{{0, "MULTI\r\nEVAL \"return redis.call('SET', KEYS[1], 1)\" 1 {k}a\r\nNOSUCH\r\nEXEC\r\nEXISTS {k}a\r\n", ""}}},
	{"a script with lifetimes and the connection's commands", []txStep{{0, "MULTI\r\nSET {k}t v EX 100\r\n" +
		"EVAL \"redis.call('PEXPIRE', KEYS[1], 50000); return redis.call('TTL', KEYS[1])\" 1 {k}t\r\nCLIENT SETNAME scripted\r\nTTL {k}t\r\nCLIENT GETNAME\r\nEXEC\r\n", ""}}},
	{"a script in the keyspace a SELECT queued before it moved to", []txStep{{0, "SELECT 4\r\nSET {k}a 1\r\nMULTI\r\n" +
		"SET {k}b 1\r\nSELECT 5\r\nEVAL \"redis.call('SET', KEYS[1], 'five'); return redis.call('GET', KEYS[2])\" 2 {k}a {k}b\r\nINCR {k}b\r\nEXEC\r\n" +
		"MGET {k}a {k}b\r\nSELECT 4\r\nMGET {k}a {k}b\r\nSELECT 0\r\nMGET {k}a {k}b\r\n", ""}}},
}

// TestMultiDifferential sends the same command streams to redis-server
// and to a 3-node cluster (the first connection on a follower, the second
// on the leader), in RESP2 and after HELLO 3, and compares every reply
// byte for byte.
func TestMultiDifferential(t *testing.T) {
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	targets := []struct {
		name  string
		addrs [2]string
	}{{"redis-server", [2]string{redisAddr, redisAddr}}, {"idemgate", [2]string{tc.addrs[(leader+1)%3], tc.addrs[leader]}}}
	for _, proto := range []int{2, 3} {
		for ci, tt := range txCases {
			t.Run(fmt.Sprintf("resp%d/%s", proto, tt.name), func(t *testing.T) {
				var got [2][]string
				for ti, target := range targets {
					prefix := fmt.Sprintf("tx%d:%d:", proto, ci)
					var conns [2]*rawConn
					for i := range conns {
						conns[i] = dialRaw(t, target.addrs[i])
						if proto == 3 {
							conns[i].send("HELLO 3\r\n")
							conns[i].replies(1) // the servers' own
						}
					}
					for _, s := range tt.steps {
						c := conns[s.conn]
						if s.gone != "" {
							waitExpired(t, c, strings.ReplaceAll(s.gone, "{k}", prefix))
							continue
						}
						send := strings.ReplaceAll(s.send, "{k}", prefix)
						c.send(send)
						got[ti] = append(got[ti], strings.Join(c.replies(strings.Count(send, "\r\n")), ""))
					}
				}
				for i := range got[0] {
					if got[0][i] != got[1][i] {
						t.Errorf("step %d (%q):\n redis-server: %q\n     idemgate: %q", i, tt.steps[i].send, got[0][i], got[1][i])
					}
				}
			})
		}
	}
}

// waitExpired polls until key is gone (a key of a short lifetime).
func waitExpired(t *testing.T, c *rawConn, key string) {
	t.Helper()
	for i := 0; ; i++ {
		c.send("EXISTS " + key + "\r\n")
		if r := c.replies(1)[0]; r == ":0\r\n" {
			return
		}
		if i == 400 {
			t.Fatalf("%s never expired", key)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestMultiHostile: what cannot be a transaction is refused, and a
// client told that EXEC failed (or that never sent it) has had none of
// its writes applied: each case's replies are exact, and "txk" keeps its
// value 5 after it.
func TestMultiHostile(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) {
		c.Auth, c.MaxTxCommands, c.MaxTxBytes, c.MaxWatches = testAuth, 100, 1<<10, 50
	})
	abort := "-" + msgExecAbort + "\r\n"
	q := "+QUEUED\r\n"
	keys := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, " w%d", i)
		}
		return b.String()
	}
	tests := []struct {
		name    string
		send    string // after AUTH app-secret
		replies []string
		closes  bool // the listener closes the connection
	}{
		{"the issue's transaction, spoiled", "MULTI\r\nSET txk 1\r\nINCR txk\r\nNOSUCH\r\nEXEC\r\n",
			[]string{"+OK\r\n", q, q, "-ERR unknown command 'NOSUCH', with args beginning with: \r\n", abort}, false},
		{"a command idemgate cannot queue", "MULTI\r\nSET txk 1\r\nIDEM.TOKEN pay\r\nEXEC\r\n",
			[]string{"+OK\r\n", q, "-" + fmt.Sprintf(msgNoTx, "IDEM.TOKEN") + "\r\n", abort}, false},
		// A script is queued and runs at EXEC, with the rest.
		{"a script", "MULTI\r\nSET txq 1\r\n" + array("EVAL", "return redis.call('set', KEYS[1], 2)", "1", "txq") + "EXEC\r\nGET txq\r\n",
			[]string{"+OK\r\n", q, q, "*2\r\n+OK\r\n+OK\r\n", "$1\r\n2\r\n"}, false},
		// A command the script sandbox cannot run beside a script aborts
		// the transaction whole.
		{"a script beside RENAME", "SET txr 1\r\nMULTI\r\nRENAME txr txs\r\n" + array("EVAL", "return 1", "0") + "EXEC\r\nEXISTS txr\r\n",
			[]string{"+OK\r\n", "+OK\r\n", q, q, "-" + fmt.Sprintf(msgTxScriptOnly, "RENAME") + "\r\n", ":1\r\n"}, false},
		// MSETNX is a transaction of its own (its keys watched as absent):
		// it cannot be part of another, or it would not be all or none.
		{"MSETNX", "MULTI\r\nSET txk 1\r\nMSETNX txk 2 txn 3\r\nEXEC\r\nEXISTS txn\r\n",
			[]string{"+OK\r\n", q, "-" + fmt.Sprintf(msgNoTxOwn, "MSETNX") + "\r\n", abort, ":0\r\n"}, false},
		{"over the command bound", "MULTI\r\n" + strings.Repeat("SET txk 1\r\n", 101) + "EXEC\r\n",
			append(append([]string{"+OK\r\n"}, repeat(q, 100)...), "-"+fmt.Sprintf(msgTxCommands, 100)+"\r\n", abort), false},
		{"over the byte bound", "MULTI\r\nSET txk " + strings.Repeat("v", 1000) + "\r\nSET txk " + strings.Repeat("v", 100) + "\r\nEXEC\r\n",
			[]string{"+OK\r\n", q, "-" + fmt.Sprintf(msgTxBytes, 1<<10) + "\r\n", abort}, false},
		{"over the watch bound", "WATCH" + keys(40) + "\r\nWATCH" + keys(51)[len(keys(40)):] + "\r\nMULTI\r\nSET txk 1\r\nDISCARD\r\n",
			[]string{"+OK\r\n", "-" + fmt.Sprintf(msgTooMany, 50) + "\r\n", "+OK\r\n", q, "+OK\r\n"}, false},
		{"a watch of a reserved key", "WATCH \x00node/n1\r\n",
			[]string{"-ERR reserved key: keys that begin with a NUL byte are idemgate's own\r\n"}, false},
		{"a reserved key inside", "MULTI\r\nSET \x00node/n1 x\r\nGET txk\r\nEXEC\r\n",
			[]string{"+OK\r\n", q, q, "*2\r\n-ERR reserved key: keys that begin with a NUL byte are idemgate's own\r\n$1\r\n5\r\n"}, false},
		{"binary arguments", "*3\r\n$3\r\nSET\r\n$3\r\ntxb\r\n$2\r\n\r\n\r\n*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$4\r\ntx\x00k\r\n$1\r\n\x00\r\n*1\r\n$7\r\nDISCARD\r\n",
			[]string{"+OK\r\n", "+OK\r\n", q, "+OK\r\n"}, false},
		{"QUIT inside", "MULTI\r\nSET txk 1\r\nQUIT\r\nSET txk 2\r\nEXEC\r\n", []string{"+OK\r\n", q, "+OK\r\n"}, true},
		{"closed inside", "MULTI\r\nSET txk 1\r\n", []string{"+OK\r\n", q}, false},
		{"a protocol error inside", "MULTI\r\nSET txk 1\r\n*1\r\n$x\r\n", []string{"+OK\r\n", q, "-ERR Protocol error: invalid bulk length\r\n"}, true},
	}
	setup := dialRaw(t, srv.Addr())
	setup.send("AUTH app-secret\r\nSET txk 5\r\n")
	setup.expect("setup", []string{"+OK\r\n", "+OK\r\n"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, srv.Addr())
			c.send("AUTH app-secret\r\n")
			c.expect("AUTH", []string{"+OK\r\n"})
			c.send(tt.send)
			c.expect(tt.send, tt.replies)
			if tt.closes && !c.closed() {
				t.Fatal("the connection stays open")
			}
			c.nc.Close()
			setup.send("GET txk\r\n")
			setup.expect("GET txk", []string{"$1\r\n5\r\n"})
		})
	}
	t.Run("HELLO 3 inside switches the replies after it", func(t *testing.T) {
		c := dialRaw(t, srv.Addr())
		c.send("AUTH app-secret\r\nMULTI\r\nGET nokey\r\nHELLO 3\r\nGET nokey\r\nEXEC\r\nGET nokey\r\n")
		got := c.replies(6)
		if strings.Join(got[:5], "") != "+OK\r\n+OK\r\n"+q+q+q || !strings.HasPrefix(got[5], "*3\r\n$-1\r\n%7\r\n$6\r\nserver\r\n") ||
			!strings.HasSuffix(got[5], "*0\r\n_\r\n") {
			t.Fatalf("replies = %q", got)
		}
		if r := c.replies(1); r[0] != "_\r\n" {
			t.Fatalf("GET after it = %q, want RESP3's null", r)
		}
	})
	t.Run("a read-only grant cannot queue writes", func(t *testing.T) {
		c := dialRaw(t, srv.Addr())
		c.send("AUTH read-secret\r\nMULTI\r\nGET txk\r\nSET txk 1\r\nEXEC\r\nMULTI\r\nGET txk\r\nEXISTS txk\r\nEXEC\r\n")
		c.expect("reader", []string{"+OK\r\n", "+OK\r\n", q,
			"-NOPERM User reader has no permissions to run the 'set' command\r\n", abort,
			"+OK\r\n", q, q, "*2\r\n$1\r\n5\r\n:1\r\n"})
	})
}

// TestRedisPyPipeline: redis-py's default pipeline (a transaction), and
// WATCH through pipeline.watch with its WatchError retry loop, against a
// 3-node cluster and against redis-server: both print the same. Debian's
// python3-redis; without it the test skips, except under CI (.ci/run
// installs it).
func TestRedisPyPipeline(t *testing.T) {
	py := pythonWithRedis(t)
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	script := `
import sys, redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]), socket_timeout=10)
other = redis.Redis(host="127.0.0.1", port=int(sys.argv[2]), socket_timeout=10)
r.delete("py:k", "py:other", "py:w")
r.set("py:k", 1)
p = r.pipeline()
print("executed", p.set("py:k", 10).incr("py:k").get("py:k").set("py:other", "x").execute())
p = r.pipeline()
p.set("py:k", "word").incr("py:k").set("py:other", "y")
try:
    p.execute()
except redis.exceptions.ResponseError as e:
    print("raised", str(e))
print("get", r.get("py:k"), r.get("py:other"))
p = r.pipeline()
p.set("py:k", 1).execute_command("INCRBY", "py:k", "x", "y")
try:
    p.execute()
except redis.exceptions.ResponseError as e:
    print("raised", str(e))
print("get", r.get("py:k"))
r.set("py:w", 0)
tries = 0
with r.pipeline() as p:
    while True:
        try:
            p.watch("py:w")
            n = int(p.get("py:w"))
            tries += 1
            if tries == 1:
                other.set("py:w", 100)
            p.multi()
            p.set("py:w", n + 1)
            print("executed", p.execute())
            break
        except redis.WatchError:
            print("watch error")
print("get", r.get("py:w"), tries)
`
	want := "executed [True, 11, b'11', True]\n" +
		"raised Command # 2 (INCRBY py:k 1) of pipeline caused error: value is not an integer or out of range\n" +
		"get b'word' b'y'\n" +
		"raised Command # 2 (INCRBY py:k x y) of pipeline caused error: wrong number of arguments for 'incrby' command\n" +
		"get b'word'\n" +
		"watch error\n" +
		"executed [True]\n" +
		"get b'101' 2\n"
	for _, addrs := range [][2]string{{redisAddr, redisAddr}, {tc.addrs[0], tc.addrs[1]}} {
		_, p1, _ := strings.Cut(addrs[0], ":")
		_, p2, _ := strings.Cut(addrs[1], ":")
		out, err := exec.Command(py, "-c", script, p1, p2).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-py against %s: %v\n%s", addrs[0], err, out)
		}
		if string(out) != want {
			t.Errorf("redis-py against %s printed\n%s\nwant\n%s", addrs[0], out, want)
		}
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

// TestMultiOneEntry: a transaction of writes is one log entry, whatever
// its size; one of reads only (watches included) is none.
func TestMultiOneEntry(t *testing.T) {
	store := memstore.New(t)
	srv := startServer(t, store, "mem", nil)
	c := dialRaw(t, srv.Addr())
	c.send("SET one:a 1\r\n")
	c.expect("SET", []string{"+OK\r\n"})
	tests := []struct {
		send    string
		replies []string
		entries uint64
	}{
		{"MULTI\r\nSET one:a 2\r\nINCR one:a\r\nDEL one:b one:c\r\nGET one:a\r\nEXEC\r\n",
			[]string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "*4\r\n+OK\r\n:3\r\n:0\r\n$1\r\n3\r\n"}, 1},
		{"WATCH one:a\r\nMULTI\r\nGET one:a\r\nEXISTS one:a one:b\r\nPTTL one:a\r\nEXEC\r\n",
			[]string{"+OK\r\n", "+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "*3\r\n$1\r\n3\r\n:1\r\n:-1\r\n"}, 0},
		{"WATCH one:a\r\nMULTI\r\nEXEC\r\n", []string{"+OK\r\n", "+OK\r\n", "*0\r\n"}, 0},
		// MSET and MSETNX are one transaction of the state machine: no
		// reader sees some of their keys written and not the others.
		{"MSET one:x 1 one:y 2 one:z 3\r\n", []string{"+OK\r\n"}, 1},
		{"MSETNX one:n1 1 one:n2 2\r\n", []string{":1\r\n"}, 1},
		{"MSETNX one:n3 1 one:n2 2\r\nEXISTS one:n3\r\n", []string{":0\r\n", ":0\r\n"}, 1},
	}
	for _, tt := range tests {
		before, _ := store.Indexes()
		c.send(tt.send)
		c.expect(tt.send, tt.replies)
		if after, _ := store.Indexes(); after-before != tt.entries {
			t.Errorf("%q took %d log entries, want %d", tt.send, after-before, tt.entries)
		}
	}
}
