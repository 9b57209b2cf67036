package resp

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// trackStep is one step of a tracking stream: send on a connection and
// read one reply per line sent, or (recv) read that many frames without
// sending: the pushes another connection's write caused. A read blocks
// until the frame comes (the connection's deadline bounds it).
type trackStep struct {
	conn int
	send string
	recv int
}

// trackCases are streams of three connections: 0 and 2 on one node, 1
// (the writer) on another; {k} is the case's key prefix, {id2} the id of
// connection 2 (CLIENT ID: a redirection is to a connection of the same
// node), and conn 0 speaks RESP3 unless the case's name begins with resp2.
var trackCases = []struct {
	name  string
	steps []trackStep
}{
	{"default mode: a read key is invalidated once, by another's write and by a delete", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON\r\n"},
		{conn: 0, send: "GET {k}a\r\n"},
		{conn: 1, send: "SET {k}a 1\r\n"},
		{conn: 0, recv: 1},
		{conn: 1, send: "SET {k}a 2\r\n"}, // not read since: no push
		{conn: 0, send: "MGET {k}a {k}b\r\n"},
		{conn: 1, send: "DEL {k}a\r\n"},
		{conn: 0, recv: 1},
		{conn: 1, send: "SET {k}b x\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "PING\r\n"},
		{conn: 0, send: "CLIENT TRACKINGINFO\r\n"},
		{conn: 0, send: "CLIENT GETREDIR\r\n"},
	}},
	{"default mode: its own write invalidates after the reply", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON\r\n"},
		{conn: 0, send: "GET {k}a\r\n"},
		{conn: 0, send: "SET {k}a 1\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "PING\r\n"},
	}},
	{"default mode: incr, expire, getdel, rename", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON\r\n"},
		{conn: 0, send: "GET {k}n\r\n"},
		{conn: 1, send: "INCR {k}n\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "TTL {k}n\r\n"},
		{conn: 1, send: "EXPIRE {k}n 100\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "STRLEN {k}n\r\n"},
		{conn: 1, send: "RENAME {k}n {k}m\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "EXISTS {k}m\r\n"},
		{conn: 1, send: "GETDEL {k}m\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "PING\r\n"},
	}},
	{"default mode: list reads and writes", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON\r\n"},
		{conn: 0, send: "LRANGE {k}l 0 -1\r\n"},
		{conn: 1, send: "RPUSH {k}l a b\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "LLEN {k}l\r\n"},
		{conn: 1, send: "LPOP {k}l\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "PING\r\n"},
	}},
	{"default mode: an expiry invalidates", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON\r\n"},
		{conn: 1, send: "SET {k}e 1 PX 200\r\n"},
		{conn: 0, send: "GET {k}e\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "PING\r\n"},
	}},
	{"optin: only after CLIENT CACHING YES, and through a transaction", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON OPTIN\r\n"},
		{conn: 0, send: "GET {k}a\r\n"},
		{conn: 1, send: "SET {k}a 1\r\n"},
		{conn: 0, send: "CLIENT CACHING YES\r\n"},
		{conn: 0, send: "CLIENT TRACKINGINFO\r\n"},
		{conn: 0, send: "GET {k}a\r\n"},
		{conn: 0, send: "GET {k}b\r\n"}, // caching was for one command
		{conn: 1, send: "SET {k}b 1\r\n"},
		{conn: 1, send: "SET {k}a 2\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "CLIENT CACHING YES\r\nMULTI\r\nPTTL {k}c\r\nGET {k}c\r\nEXEC\r\n"},
		{conn: 1, send: "SET {k}c 1\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "PING\r\n"},
	}},
	{"optout: CLIENT CACHING NO skips one command", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON OPTOUT\r\n"},
		{conn: 0, send: "CLIENT CACHING NO\r\n"},
		{conn: 0, send: "GET {k}a\r\n"},
		{conn: 0, send: "GET {k}b\r\n"},
		{conn: 1, send: "SET {k}a 1\r\n"},
		{conn: 1, send: "SET {k}b 1\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "PING\r\n"},
	}},
	{"bcast: every key under a prefix, read or not", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON BCAST PREFIX {k}user: PREFIX {k}order:\r\n"},
		{conn: 0, send: "CLIENT TRACKINGINFO\r\n"},
		{conn: 1, send: "SET {k}user:1 a\r\n"},
		{conn: 0, recv: 1},
		{conn: 1, send: "SET {k}other x\r\n"},
		{conn: 1, send: "SET {k}order:7 b\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "GET {k}other\r\n"},
		{conn: 0, send: "PING\r\n"},
	}},
	{"refusals", []trackStep{
		{conn: 0, send: "CLIENT CACHING YES\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON PREFIX a\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON BCAST OPTIN\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON OPTIN OPTOUT\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON BCAST PREFIX ab PREFIX a\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON BCAST PREFIX a PREFIX b PREFIX a\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON REDIRECT 999999999\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON REDIRECT abc\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON REDIRECT {id2} REDIRECT {id2}\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON NOPE\r\n"},
		{conn: 0, send: "CLIENT TRACKING MAYBE\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON PREFIX\r\n"},
		{conn: 0, send: "CLIENT TRACKING\r\n"},
		{conn: 0, send: "CLIENT CACHING\r\n"},
		{conn: 0, send: "CLIENT GETREDIR x\r\n"},
		{conn: 0, send: "CLIENT TRACKINGINFO x\r\n"},
		{conn: 0, send: "CLIENT TRACKINGINFO\r\n"},
		{conn: 0, send: "CLIENT GETREDIR\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON\r\n"},
		{conn: 0, send: "CLIENT CACHING YES\r\n"},
		{conn: 0, send: "CLIENT CACHING NO\r\n"},
		{conn: 0, send: "CLIENT CACHING MAYBE\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON BCAST\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON OPTIN\r\n"},
		{conn: 0, send: "CLIENT TRACKING OFF\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON OPTIN\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON OPTOUT\r\n"},
		{conn: 0, send: "CLIENT TRACKING OFF\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON BCAST PREFIX a\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON BCAST PREFIX abc\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON BCAST PREFIX b\r\n"},
		{conn: 0, send: "CLIENT TRACKINGINFO\r\n"},
		{conn: 0, send: "CLIENT TRACKING OFF\r\n"},
		{conn: 0, send: "CLIENT TRACKINGINFO\r\n"},
	}},
	{"redirect to a RESP3 connection", []trackStep{
		{conn: 2, send: "HELLO 3\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON REDIRECT {id2}\r\n"},
		{conn: 0, send: "CLIENT GETREDIR\r\n"},
		{conn: 0, send: "GET {k}a\r\n"},
		{conn: 1, send: "SET {k}a 1\r\n"},
		{conn: 2, recv: 1},
		{conn: 0, send: "PING\r\n"},
		{conn: 2, send: "PING\r\n"},
	}},
	{"resp2 without redirect: accepted, and nothing is pushed", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON\r\n"},
		{conn: 0, send: "GET {k}a\r\n"},
		{conn: 1, send: "SET {k}a 1\r\n"},
		{conn: 0, send: "PING\r\n"},
		{conn: 0, send: "CLIENT TRACKINGINFO\r\n"},
	}},
	{"resp2 redirect to a RESP2 connection: nothing is pushed", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON REDIRECT {id2}\r\n"},
		{conn: 0, send: "GET {k}a\r\n"},
		{conn: 1, send: "SET {k}a 1\r\n"},
		{conn: 2, send: "PING\r\n"},
	}},
	{"keyspaces: a key is tracked by its name, in its keyspace and in another", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON\r\n"},
		{conn: 0, send: "SELECT 1\r\n"},
		{conn: 0, send: "GET {k}a\r\n"},
		{conn: 1, send: "SELECT 1\r\n"},
		{conn: 1, send: "SET {k}a 1\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "GET {k}b\r\n"},
		{conn: 1, send: "SELECT 0\r\n"},
		{conn: 1, send: "SET {k}b 1\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "PING\r\n"},
	}},
	// A script's declared keys are remembered once it calls a read
	// command (not a write, not PING), whatever keys that reads; one
	// through a follower runs on the leader, which says whether it read.
	// A push that should not be would come ahead of the next one read.
	{"scripts: declared keys, once a read command is called", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON\r\n"},
		{conn: 0, send: "EVAL \"return redis.call('set', KEYS[1] .. 'x', 'bar')\" 2 {k}p {k}q\r\n"},
		{conn: 1, send: "MSET {k}p 1 {k}q 1\r\n"},
		{conn: 0, send: "EVAL \"return redis.call('get', ARGV[1])\" 2 {k}a {k}b {k}c\r\n"},
		{conn: 1, send: "SET {k}c 1\r\n"},
		{conn: 1, send: "MSET {k}a 2 {k}b 2\r\n"},
		{conn: 0, recv: 2},
		{conn: 0, send: "EVAL_RO \"return redis.call('ping')\" 1 {k}r\r\n"},
		{conn: 0, send: "EVAL \"redis.call('set', KEYS[1], 'x') return redis.call('get', KEYS[1])\" 1 {k}s\r\n"},
		{conn: 1, send: "SET {k}r 1\r\n"},
		{conn: 1, send: "SET {k}s 1\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "EVAL_RO \"return redis.call('get', KEYS[1])\" 1 {k}t\r\n"},
		{conn: 1, send: "SET {k}t 4\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "PING\r\n"},
	}},
	// NOLOOP: a connection's own writes (a command, a pipeline, a
	// transaction, a script, which on a follower runs on the leader) are
	// not pushed to it, another's are; a push of one of its own would come
	// ahead of the last one read (the changes of one node's log are told
	// in order) and differ.
	{"noloop: its own writes are not pushed, another's are", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON NOLOOP\r\n"},
		{conn: 0, send: "MGET {k}a {k}b {k}c {k}z\r\n"},
		{conn: 0, send: "SET {k}a 1\r\n"},
		{conn: 0, send: "MULTI\r\nINCR {k}b\r\nEXEC\r\n"},
		{conn: 0, send: "EVAL \"return redis.call('set', KEYS[1], 'x')\" 1 {k}c\r\n"},
		{conn: 0, send: "SET {k}a 2\r\nSET {k}b 3\r\n"},
		{conn: 1, send: "SET {k}z 1\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "GET {k}a\r\n"},
		{conn: 1, send: "SET {k}a 5\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "CLIENT TRACKINGINFO\r\n"},
	}},
	// A transaction's or a script's read after its own write of the same
	// key is remembered (the write is noted first: on a follower it may
	// apply after the read is remembered) and told of another's write.
	{"noloop: a read after its own write in a transaction or script is told", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON NOLOOP\r\n"},
		{conn: 0, send: "MULTI\r\nSET {k}a 1\r\nGET {k}a\r\nEXEC\r\n"},
		{conn: 0, send: "EVAL \"redis.call('set', KEYS[1], 'x') return redis.call('get', KEYS[1])\" 1 {k}b\r\n"},
		{conn: 1, send: "SET {k}a 2\r\n"},
		{conn: 0, recv: 1},
		{conn: 1, send: "SET {k}b 2\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "PING\r\n"},
	}},
	{"noloop bcast: its own writes under its prefix are not pushed", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON BCAST NOLOOP PREFIX {k}\r\n"},
		{conn: 0, send: "SET {k}a 1\r\n"},
		{conn: 0, send: "SET {k}b 1\r\nSET {k}c 1\r\n"},
		{conn: 0, send: "EVAL \"return redis.call('set', KEYS[1], 'x')\" 1 {k}c\r\n"},
		{conn: 1, send: "SET {k}d 1\r\n"},
		{conn: 0, recv: 2}, // the script's write, as Redis tells it, and d
		{conn: 1, send: "MSET {k}e 1 {k}f 1\r\n"},
		{conn: 0, recv: 1},
		{conn: 0, send: "PING\r\n"},
	}},
	{"noloop with redirect: the tracking connection's writes are not pushed", []trackStep{
		{conn: 2, send: "HELLO 3\r\n"},
		{conn: 0, send: "CLIENT TRACKING ON REDIRECT {id2} NOLOOP\r\n"},
		{conn: 0, send: "MGET {k}a {k}z\r\n"},
		{conn: 0, send: "SET {k}a 1\r\n"},
		{conn: 1, send: "SET {k}z 1\r\n"},
		{conn: 2, recv: 1},
		{conn: 2, send: "PING\r\n"},
	}},
	{"flush: FLUSHDB of another keyspace tells every tracking client to drop everything", []trackStep{
		{conn: 0, send: "CLIENT TRACKING ON\r\n"},
		{conn: 0, send: "GET {k}a\r\n"},
		{conn: 1, send: "SELECT 3\r\n"},
		{conn: 1, send: "SET {k}x 1\r\n"},
		{conn: 1, send: "FLUSHDB\r\n"},
		{conn: 0, recv: 1},
		{conn: 1, send: "FLUSHDB\r\n"}, // an empty keyspace too
		{conn: 0, recv: 1},
		{conn: 0, send: "PING\r\n"},
	}},
}

// TestTrackingAgainstRedis runs the streams against redis-server and the
// cluster (conn 0 on one node, the writers on another) and compares every
// reply and push. A push is read where it is due: one idemgate did not
// send makes the read wait out the connection's deadline and fail; one
// too many comes ahead of the next reply and differs.
func TestTrackingAgainstRedis(t *testing.T) {
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	targets := []struct {
		name  string
		addrs [3]string
	}{
		{"redis-server", [3]string{redisAddr, redisAddr, redisAddr}},
		{"idemgate", [3]string{tc.addrs[(leader+1)%3], tc.addrs[leader], tc.addrs[(leader+1)%3]}},
	}
	for ci, tt := range trackCases {
		t.Run(tt.name, func(t *testing.T) {
			var got [2][]string
			for ti, target := range targets {
				prefix := fmt.Sprintf("trk%d:", ci)
				var conns [3]*rawConn
				for i := range conns {
					conns[i] = dialRaw(t, target.addrs[i])
					conns[i].nc.SetDeadline(time.Now().Add(10 * time.Second))
				}
				if !strings.HasPrefix(tt.name, "resp2") {
					conns[0].send("HELLO 3\r\n")
					conns[0].replies(1)
				}
				conns[2].send("CLIENT ID\r\n")
				id2 := strings.TrimSuffix(strings.TrimPrefix(conns[2].replies(1)[0], ":"), "\r\n")
				for _, s := range tt.steps {
					c := conns[s.conn]
					n := s.recv
					if s.send != "" {
						send := strings.ReplaceAll(strings.ReplaceAll(s.send, "{k}", prefix), "{id2}", id2)
						c.send(send)
						n = strings.Count(send, "\r\n")
					}
					r := strings.Join(c.replies(n), "")
					r = strings.ReplaceAll(r, prefix, "{k}")
					if strings.HasPrefix(s.send, "HELLO") {
						r = "(the servers' own HELLO)"
					}
					if strings.Contains(s.send, "GETREDIR") || strings.Contains(s.send, "TRACKINGINFO") {
						r = strings.ReplaceAll(r, ":"+id2+"\r\n", ":{id2}\r\n")
					}
					got[ti] = append(got[ti], r)
				}
			}
			for i := range got[0] {
				if got[0][i] != got[1][i] {
					t.Errorf("step %d (%+v):\n redis-server: %q\n     idemgate: %q", i, tt.steps[i], got[0][i], got[1][i])
				}
			}
		})
	}
}
