package resp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestReadGroupUnblockedAgainstRedis: an XREADGROUP blocked on a stream
// is answered as redis-server answers it when the stream is deleted,
// overwritten by a value of another kind (SET, MULTI with DEL and SADD,
// RENAME of a string onto it), made anew without its group, or loses
// its group: Redis 7.0 unblocks the reader with UNBLOCKED or NOGROUP,
// never WRONGTYPE (Redis's
// stream-cgroups unit, "Blocking XREADGROUP: key type changed with
// SET"). The reader waits on a follower; the change goes through
// another node.
func TestReadGroupUnblockedAgainstRedis(t *testing.T) {
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	follower, other := (leader+1)%3, (leader+2)%3
	changes := []struct {
		name string
		cmds [][]string // "{k}" is the stream's key
	}{
		{"DEL", [][]string{{"DEL", "{k}"}}},
		{"SET", [][]string{{"SET", "{k}", "val1"}}},
		{"MULTI DEL SADD", [][]string{{"MULTI"}, {"DEL", "{k}"}, {"SADD", "{k}", "e1"}, {"EXEC"}}},
		{"MULTI DEL LPUSH", [][]string{{"MULTI"}, {"DEL", "{k}"}, {"LPUSH", "{k}", "e1"}, {"EXEC"}}},
		{"RENAME a string onto it", [][]string{{"SET", "{k}:str", "x"}, {"RENAME", "{k}:str", "{k}"}}},
		{"MULTI DEL XADD", [][]string{{"MULTI"}, {"DEL", "{k}"}, {"XADD", "{k}", "667", "f", "v"}, {"EXEC"}}},
		{"XGROUP DESTROY", [][]string{{"XGROUP", "DESTROY", "{k}", "g"}}},
	}
	blockedOn := func(addr string) func() bool {
		return func() bool {
			return strings.Contains(ask(t, addr, array("INFO", "clients")), "\r\nblocked_clients:1\r\n")
		}
	}
	answer := func(readAddr, writeAddr, key string, cmds [][]string) string {
		for _, c := range [][]string{{"DEL", key}, {"XADD", key, "666", "f", "v"}, {"XGROUP", "CREATE", key, "g", "$"}} {
			ask(t, writeAddr, array(c...))
		}
		r := dialRaw(t, readAddr)
		r.send(array("XREADGROUP", "GROUP", "g", "Alice", "BLOCK", "0", "STREAMS", key, ">"))
		testsupport.WaitFor(t, "a blocked XREADGROUP", 60*time.Second, blockedOn(readAddr))
		w := dialRaw(t, writeAddr)
		for _, c := range cmds {
			args := make([]string, len(c))
			for i, a := range c {
				args[i] = strings.ReplaceAll(a, "{k}", key)
			}
			w.send(array(args...))
			w.replies(1)
		}
		return waitAnswer(r)
	}
	for i, ch := range changes {
		key := fmt.Sprintf("{ub}%d", i)
		want := answer(redisAddr, redisAddr, key, ch.cmds)
		got := answer(tc.addrs[follower], tc.addrs[other], key, ch.cmds)
		if got != want {
			t.Errorf("%s: the blocked XREADGROUP got %q, redis-server answers %q", ch.name, got, want)
		}
	}
}
