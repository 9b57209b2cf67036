package resp

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/idemgate/idemgate/internal/memstore"
)

// keyspaceStreams are command streams of SELECT and what it moves, whose
// replies must be Redis 7's, byte for byte ("{k}" is the stream's own key
// prefix; KEYS replies are compared sorted). Each stream begins in
// keyspace 0, on a connection of its own.
var keyspaceStreams = [][][]string{
	// SELECT: keyspaces apart, and its refusals
	{{"SELECT", "1"}, {"SET", "{k}a", "1"}, {"GET", "{k}a"}, {"SELECT", "0"}, {"GET", "{k}a"}, {"EXISTS", "{k}a"},
		{"SET", "{k}a", "zero"}, {"SELECT", "1"}, {"GET", "{k}a"}, {"KEYS", "{k}*"}, {"SELECT", "15"}, {"KEYS", "{k}*"},
		{"SET", "{k}a", "fifteen"}, {"SELECT", "16"}, {"SELECT", "-1"}, {"SELECT", "x"}, {"SELECT", "2147483648"},
		{"SELECT", "-2147483649"}, {"SELECT", "18446744073709551616"}, {"SELECT", "01"}, {"SELECT", "+1"}, {"SELECT", " 1"},
		{"SELECT", "-0"}, {"SELECT", ""}, {"SELECT", "1.0"}, {"SELECT", "\x00"}, {"SELECT"}, {"SELECT", "1", "2"},
		{"GET", "{k}a"}, {"SELECT", "0"}, {"GET", "{k}a"}, {"DEL", "{k}a"}, {"SELECT", "1"}, {"GET", "{k}a"}},
	// MOVE, COPY ... DB, RENAME inside a keyspace
	{{"SELECT", "2"}, {"SET", "{k}m", "v", "EX", "100"}, {"MOVE", "{k}m", "3"}, {"EXISTS", "{k}m"}, {"SELECT", "3"},
		{"GET", "{k}m"}, {"TTL", "{k}m"}, {"MOVE", "{k}m", "3"}, {"MOVE", "{k}m", "16"}, {"MOVE", "{k}m", "x"}, {"MOVE", "{k}m", "-1"},
		{"MOVE", "{k}none", "2"}, {"MOVE", "{k}none", "3"}, {"SELECT", "2"}, {"SET", "{k}m", "other"}, {"SELECT", "3"},
		{"MOVE", "{k}m", "2"}, {"GET", "{k}m"}, {"COPY", "{k}m", "{k}m", "DB", "2"}, {"COPY", "{k}m", "{k}m", "DB", "2", "REPLACE"},
		{"COPY", "{k}m", "{k}m", "DB", "3"}, {"COPY", "{k}m", "{k}m"}, {"SELECT", "2"}, {"GET", "{k}m"}, {"TTL", "{k}m"},
		{"COPY", "{k}m", "{k}c", "DB", "4"}, {"SELECT", "4"}, {"GET", "{k}c"}, {"RENAME", "{k}c", "{k}d"}, {"RENAMENX", "{k}d", "{k}e"},
		{"SELECT", "0"}, {"EXISTS", "{k}c", "{k}d", "{k}e", "{k}m"}, {"MOVE", "{k}x"}, {"MOVE", "{k}x", "1", "2"},
		{"SET", "{k}z", "0"}, {"MOVE", "{k}z", "0"}, {"MOVE", "{k}z", "01"}, {"MOVE", "{k}z", "2147483648"}, {"MOVE", "{k}z", "5"},
		{"EXISTS", "{k}z"}, {"SELECT", "5"}, {"GET", "{k}z"}, {"DEL", "{k}z"}},
	// MULTI: a SELECT inside moves the commands after it; WATCH keeps its keyspace
	{{"SELECT", "5"}, {"MULTI"}, {"SET", "{k}a", "5"}, {"SELECT", "6"}, {"SET", "{k}a", "6"}, {"GET", "{k}a"}, {"SELECT", "99"},
		{"GET", "{k}a"}, {"EXEC"}, {"GET", "{k}a"}, {"SELECT", "5"}, {"GET", "{k}a"},
		{"SELECT", "7"}, {"SET", "{k}w", "1"}, {"WATCH", "{k}w"}, {"SELECT", "8"}, {"SET", "{k}w", "x"}, {"MULTI"}, {"GET", "{k}w"}, {"EXEC"},
		{"SELECT", "7"}, {"WATCH", "{k}w"}, {"SET", "{k}w", "3"}, {"MULTI"}, {"GET", "{k}w"}, {"EXEC"},
		{"WATCH", "{k}w"}, {"SELECT", "8"}, {"MULTI"}, {"SELECT", "7"}, {"SET", "{k}w", "4"}, {"EXEC"}, {"GET", "{k}w"},
		{"SELECT", "8"}, {"GET", "{k}w"}, {"MULTI"}, {"SELECT", "9"}, {"SET", "{k}q", "x"}, {"DISCARD"}, {"EXISTS", "{k}q"},
		{"SELECT", "9"}, {"EXISTS", "{k}q"}},
	// scripts run in the connection's keyspace
	{{"SELECT", "9"}, {"EVAL", "redis.call('set', KEYS[1], 's9') return redis.call('get', KEYS[1])", "1", "{k}e"}, {"GET", "{k}e"},
		{"SELECT", "0"}, {"EXISTS", "{k}e"}, {"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "{k}e"}, {"SELECT", "9"},
		{"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "{k}e"}, {"EVAL", "return redis.call('incr', KEYS[1])", "1", "{k}n"},
		{"MULTI"}, {"GET", "{k}n"}, {"SELECT", "10"}, {"GET", "{k}n"}, {"EXEC"}, {"SET", "{k}n", "ten"},
		{"EVAL", "return redis.call('get', KEYS[1])", "1", "{k}n"}, {"SELECT", "9"}, {"EVAL", "return redis.call('get', KEYS[1])", "1", "{k}n"}},
	// DBSIZE and KEYS per keyspace
	{{"SELECT", "11"}, {"MSET", "{k}1", "a", "{k}2", "b", "{k}3", "c"}, {"KEYS", "{k}*"}, {"SELECT", "12"}, {"KEYS", "{k}*"},
		{"SET", "{k}1", "x"}, {"KEYS", "{k}*"}, {"SELECT", "11"}, {"DEL", "{k}1"}, {"KEYS", "{k}?"}, {"SELECT", "12"}, {"KEYS", "*"}, {"DBSIZE"},
		{"SELECT", "13"}, {"DBSIZE"}, {"KEYS", "*"}},
	// the empty key, in keyspace 0 and another
	{{"SET", "", "v"}, {"GET", ""}, {"EXISTS", ""}, {"STRLEN", ""}, {"APPEND", "", "w"}, {"GET", ""}, {"RENAME", "", "{k}from"},
		{"GET", "{k}from"}, {"EXISTS", ""}, {"RENAME", "{k}from", ""}, {"GET", ""}, {"KEYS", ""}, {"SELECT", "10"}, {"SET", "", "ten"},
		{"SELECT", "0"}, {"GET", ""}, {"DEL", ""}, {"EXISTS", ""}, {"SELECT", "10"}, {"GET", ""}, {"COPY", "", "", "DB", "0"},
		{"MOVE", "", "0"}, {"GET", ""}, {"INCR", ""}, {"DEL", ""}, {"SELECT", "0"}, {"GET", ""}, {"DEL", ""}, {"SETNX", "", "n"},
		{"GETDEL", ""}, {"MSET", "", "m", "{k}x", "y"}, {"MGET", "", "{k}x"}, {"DEL", ""}},
	// lifetimes at the ends of Redis's arithmetic
	{{"SET", "{k}p", "v", "PXAT", "9223372036854775807"}, {"GET", "{k}p"}, {"SET", "{k}p", "v", "PX", "9223372036854775807"},
		{"SET", "{k}p", "v", "EXAT", "9223372036854775807"}, {"SET", "{k}p", "v", "EXAT", "9223372036854775"}, {"GET", "{k}p"},
		{"SET", "{k}p", "v", "EX", "9223372036854775"}, {"SET", "{k}p", "v", "EX", "9223372036854775808"},
		{"SETEX", "{k}s", "9223372036854775", "v"}, {"PSETEX", "{k}s", "9223372036854775807", "v"}, {"EXISTS", "{k}s"},
		{"SET", "{k}f", "bar"}, {"EXPIRE", "{k}f", "-9223372036854776"}, {"GET", "{k}f"}, {"EXPIRE", "{k}f", "9223372036854776"},
		{"EXPIRE", "{k}f", "9223372036854775"}, {"EXPIREAT", "{k}f", "-9223372036854776"}, {"EXPIREAT", "{k}f", "9223372036854776"},
		{"PEXPIRE", "{k}f", "9223372036854775807"}, {"GET", "{k}f"}, {"PEXPIREAT", "{k}f", "9223372036854775807"}, {"GET", "{k}f"},
		{"EXPIREAT", "{k}f", "9223372036854775"}, {"GET", "{k}f"}, {"GETEX", "{k}f", "PXAT", "9223372036854775807"},
		{"EXPIRE", "{k}f", "-9223372036854775"}, {"EXISTS", "{k}f"}, {"SET", "{k}f", "bar"}, {"PEXPIRE", "{k}f", "-9223372036854775808"},
		{"EXISTS", "{k}f"}, {"SET", "{k}g", "bar"}, {"PEXPIREAT", "{k}g", "-9223372036854775808"}, {"EXISTS", "{k}g"},
		{"SET", "{k}g", "bar"}, {"EXPIREAT", "{k}g", "-9223372036854775"}, {"EXISTS", "{k}g"}},
	// lists per keyspace: a pop names the client's key
	{{"SELECT", "3"}, {"RPUSH", "{k}l", "a", "b", "c"}, {"LPOP", "{k}l"}, {"SELECT", "0"}, {"LLEN", "{k}l"}, {"LPUSH", "{k}l", "zero"},
		{"SELECT", "3"}, {"BLPOP", "{k}none", "{k}l", "1"}, {"BRPOP", "{k}l", "{k}none", "0"}, {"LLEN", "{k}l"}, {"TYPE", "{k}l"},
		{"BLPOP", "{k}none", "0.01"}, {"RPUSH", "", "e"}, {"BLPOP", "{k}none", "", "1"}, {"MULTI"}, {"RPUSH", "{k}m", "1"}, {"BLPOP", "{k}m", "1"},
		{"EXEC"}, {"EVAL", "return redis.call('lpop', KEYS[1])", "1", "{k}l"}, {"MOVE", "{k}l", "4"}, {"SELECT", "4"}, {"LRANGE", "{k}l", "0", "-1"},
		{"SELECT", "0"}, {"LRANGE", "{k}l", "0", "-1"}, {"DEL", "{k}l"}},
	// FLUSHDB, FLUSHALL (last: they empty what the streams before left)
	{{"SELECT", "14"}, {"MSET", "{k}a", "1", "{k}b", "2"}, {"SET", "{k}t", "x", "EX", "100"}, {"SET", "", "e"}, {"DBSIZE"},
		{"SELECT", "13"}, {"SET", "{k}a", "13"}, {"SELECT", "14"}, {"FLUSHDB"}, {"DBSIZE"}, {"GET", "{k}a"}, {"GET", ""}, {"TTL", "{k}t"},
		{"SELECT", "13"}, {"GET", "{k}a"}, {"FLUSHDB", "x"}, {"FLUSHDB", "ASYNC", "SYNC"}, {"FLUSHDB", "async"}, {"FLUSHDB", "SYNC"},
		{"DBSIZE"}, {"SELECT", "14"}, {"SET", "{k}w", "1"}, {"WATCH", "{k}w"}, {"FLUSHDB"}, {"MULTI"}, {"SET", "{k}w", "2"}, {"EXEC"},
		{"GET", "{k}w"}, {"SET", "{k}w", "3"}, {"WATCH", "{k}w"}, {"SELECT", "13"}, {"FLUSHDB"}, {"SELECT", "14"}, {"MULTI"}, {"GET", "{k}w"},
		{"EXEC"}, {"FLUSHALL", "x"}, {"FLUSHALL", "SYNC", "SYNC"}, {"SET", "{k}z", "1"}, {"SELECT", "0"}, {"SET", "{k}z", "0"},
		{"FLUSHALL"}, {"DBSIZE"}, {"KEYS", "*"}, {"SELECT", "14"}, {"DBSIZE"}, {"FLUSHALL", "ASYNC"}, {"FLUSHDB"}, {"DBSIZE"}},
}

// TestKeyspacesAgainstRedis: keyspaceStreams answer as redis-server does
// (againstRedis).
func TestKeyspacesAgainstRedis(t *testing.T) { againstRedis(t, "ks", keyspaceStreams) }

// TestKeyspacesHostile: client keys that look like another keyspace's
// stored keys are refused in every keyspace and by every path a key takes
// (a write, a read, a rename's destination, a watch, a script's key); no
// keyspace sees another's keys; FLUSHDB and FLUSHALL need the admin
// role's token, cannot be queued or scripted, and a flush larger than one
// state machine step empties its keyspace and no other.
func TestKeyspacesHostile(t *testing.T) {
	store := memstore.New(t)
	srv := startServer(t, store, "mem", func(c *Config) {
		c.Auth = authOf(map[string]Grant{"admin-secret": {Name: "ops", Write: true, Admin: true},
			"app-secret": {Name: "app", Write: true}, "read-secret": {Name: "reader"}})
	})
	reserved := "-ERR reserved key: keys that begin with a NUL byte are idemgate's own\r\n"
	noperm := func(user, cmd string) string {
		return "-NOPERM User " + user + " has no permissions to run the '" + cmd + "' command\r\n"
	}
	tests := []struct {
		name    string
		token   string
		send    [][]string
		replies []string
	}{
		{"keys shaped like a keyspace's, from keyspace 0", "app-secret",
			[][]string{{"SELECT", "1"}, {"SET", "a", "one"}, {"SELECT", "0"}, {"GET", "\x00db\x01a"}, {"SET", "\x00db\x01a", "evil"},
				{"EXISTS", "\x00db\x01a"}, {"SET", "x", "v"}, {"RENAME", "x", "\x00db\x01a"}, {"COPY", "x", "\x00db\x01a"},
				{"COPY", "x", "\x00db\x01a", "DB", "1"}, {"MOVE", "\x00db\x01a", "2"}, {"WATCH", "\x00db\x01a"}, {"DEL", "\x00db\x01a"},
				{"MSET", "y", "1", "\x00db\x01a", "evil"}, {"EXISTS", "y"}, {"EVAL", "return redis.call('get', KEYS[1])", "1", "\x00db\x01a"},
				{"GET", "\x00db\x00"}, {"SET", "\x00db\x00", "evil"}, {"KEYS", "*"}, {"DBSIZE"}, {"SELECT", "1"}, {"GET", "a"}, {"KEYS", "*"}},
			[]string{"+OK\r\n", "+OK\r\n", "+OK\r\n", reserved, reserved, reserved, "+OK\r\n", reserved, reserved, reserved, reserved,
				reserved, reserved, reserved, ":0\r\n", "-ERR reserved key: keys that begin with a NUL byte are idemgate's own script: " + sha1hex("return redis.call('get', KEYS[1])") + ", on @user_script:1.\r\n",
				reserved, reserved, "*1\r\n$1\r\nx\r\n", ":1\r\n", "+OK\r\n", "$3\r\none\r\n", "*1\r\n$1\r\na\r\n"}},
		{"keys shaped like a keyspace's, from keyspace 5", "app-secret",
			[][]string{{"SELECT", "5"}, {"SET", "\x00db\x05a", "evil"}, {"SET", "\x00db\x00", "evil"}, {"SET", "\x00node/n1", "evil"},
				{"SET", "a", "five"}, {"COPY", "a", "\x00db\x00x", "DB", "0"}, {"DBSIZE"}, {"SELECT", "0"}, {"EXISTS", "a"}, {"SELECT", "1"}, {"DBSIZE"}},
			[]string{"+OK\r\n", reserved, reserved, reserved, "+OK\r\n", reserved, ":1\r\n", "+OK\r\n", ":0\r\n", "+OK\r\n", ":1\r\n"}},
		{"SELECT of what is no keyspace", "read-secret",
			[][]string{{"SELECT", "16"}, {"SELECT", "-1"}, {"SELECT", "18446744073709551616"}, {"SELECT", "99999999999999999999999"},
				{"SELECT", "4294967296"}, {"SELECT", "x"}, {"SELECT", "1e1"}, {"SELECT", "0x1"}, {"SELECT", "1\x00"}, {"SELECT", "15"}},
			[]string{"-ERR DB index is out of range\r\n", "-ERR DB index is out of range\r\n", "-ERR value is not an integer or out of range\r\n",
				"-ERR value is not an integer or out of range\r\n", "-ERR value is out of range, value must between -2147483648 and 2147483647\r\n",
				"-ERR value is not an integer or out of range\r\n", "-ERR value is not an integer or out of range\r\n",
				"-ERR value is not an integer or out of range\r\n", "-ERR value is not an integer or out of range\r\n", "+OK\r\n"}},
		{"a flush needs the admin role", "app-secret",
			[][]string{{"SELECT", "1"}, {"FLUSHDB"}, {"FLUSHALL"}, {"FLUSHDB", "ASYNC"}, {"GET", "a"}},
			[]string{"+OK\r\n", noperm("app", "flushdb"), noperm("app", "flushall"), noperm("app", "flushdb"), "$3\r\none\r\n"}},
		{"a flush needs the admin role, not reads", "read-secret",
			[][]string{{"FLUSHALL"}, {"FLUSHDB", "x"}, {"SELECT", "1"}, {"GET", "a"}},
			[]string{noperm("reader", "flushall"), noperm("reader", "flushdb"), "+OK\r\n", "$3\r\none\r\n"}},
		{"a flush is neither queued nor scripted", "admin-secret",
			[][]string{{"SELECT", "1"}, {"MULTI"}, {"FLUSHDB"}, {"EXEC"}, {"EVAL", "return redis.call('flushdb')", "0"},
				{"EVAL", "return redis.call('flushall')", "0"}, {"GET", "a"}},
			[]string{"+OK\r\n", "+OK\r\n",
				"-ERR FLUSHDB cannot run inside a transaction in idemgate: it is not a command of the KV keyspace; run it before MULTI or after EXEC\r\n",
				"-EXECABORT Transaction discarded because of previous errors.\r\n",
				"-ERR This Redis command is not allowed from script script: " + sha1hex("return redis.call('flushdb')") + ", on @user_script:1.\r\n",
				"-ERR This Redis command is not allowed from script script: " + sha1hex("return redis.call('flushall')") + ", on @user_script:1.\r\n", "$3\r\none\r\n"}},
		{"the admin flushes one keyspace, then all", "admin-secret",
			[][]string{{"SELECT", "1"}, {"FLUSHDB"}, {"DBSIZE"}, {"SELECT", "5"}, {"DBSIZE"}, {"FLUSHALL"}, {"DBSIZE"}, {"SELECT", "0"}, {"DBSIZE"}},
			[]string{"+OK\r\n", "+OK\r\n", ":0\r\n", "+OK\r\n", ":1\r\n", "+OK\r\n", ":0\r\n", "+OK\r\n", ":0\r\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, srv.Addr())
			c.send(array("AUTH", tt.token))
			c.expect("AUTH", []string{"+OK\r\n"})
			for i, cmd := range tt.send {
				c.send(array(cmd...))
				if r := c.replies(1)[0]; r != tt.replies[i] {
					t.Fatalf("%q = %q, want %q", cmd, r, tt.replies[i])
				}
			}
		})
	}
	if addr, ok := store.NodeAPI("n1"); ok {
		t.Fatalf("a reserved record appeared: %q", addr)
	}

	// A keyspace of more keys than one flush step: the flush takes several
	// entries, empties it, and leaves the keyspace beside it whole.
	c := dialRaw(t, srv.Addr())
	c.send(array("AUTH", "admin-secret"))
	c.expect("AUTH", []string{"+OK\r\n"})
	const n = 25000
	for _, db := range []string{"2", "3"} {
		c.send(array("SELECT", db))
		c.expect("SELECT", []string{"+OK\r\n"})
		for i := 0; i < n; i += 500 {
			args := []string{"MSET"}
			for j := i; j < i+500; j++ {
				args = append(args, fmt.Sprintf("k%06d", j), "v")
			}
			c.send(array(args...))
			c.expect("MSET", []string{"+OK\r\n"})
		}
	}
	c.send(array("SELECT", "2") + array("FLUSHDB") + array("DBSIZE") + array("SELECT", "3") + array("DBSIZE"))
	c.expect("a large FLUSHDB", []string{"+OK\r\n", "+OK\r\n", ":0\r\n", "+OK\r\n", fmt.Sprintf(":%d\r\n", n)})
	// A client blocked in keyspace 3 is woken by a push there, not by one
	// to the same key in keyspace 0, and answers the key as it named it.
	blocked, pusher := dialRaw(t, srv.Addr()), dialRaw(t, srv.Addr())
	for _, cc := range []*rawConn{blocked, pusher} {
		cc.send(array("AUTH", "app-secret") + array("SELECT", "3"))
		cc.expect("AUTH, SELECT", []string{"+OK\r\n", "+OK\r\n"})
	}
	blocked.send(array("BLPOP", "q", "0.3"))
	pusher.send(array("SELECT", "0") + array("RPUSH", "q", "zero"))
	pusher.expect("a push in keyspace 0", []string{"+OK\r\n", ":1\r\n"})
	blocked.expect("BLPOP in keyspace 3 past a push in keyspace 0", []string{"*-1\r\n"})
	blocked.send(array("BLPOP", "q", "0"))
	pusher.send(array("SELECT", "3") + array("RPUSH", "q", "three"))
	pusher.expect("a push in keyspace 3", []string{"+OK\r\n", ":1\r\n"})
	blocked.expect("BLPOP in keyspace 3", []string{"*2\r\n$1\r\nq\r\n$5\r\nthree\r\n"})
	c.send(array("CLIENT", "INFO"))
	if r := c.replies(1)[0]; !strings.Contains(r, " db=3 ") {
		t.Fatalf("CLIENT INFO in keyspace 3: %q", r)
	}
}

func sha1hex(s string) string { sum := sha1.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
