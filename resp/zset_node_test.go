package resp

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestZSetReplicasAgree: sorted set writes from every node, ZPOPMIN and
// ZPOPMAX, a script that removes what ZRANDMEMBER chose (a choice seeded
// from the entry), MULTI, leave every replica the same state hash and
// the same ranges.
func TestZSetReplicasAgree(t *testing.T) {
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	for i := range 3 {
		addr := tc.addrs[(leader+i)%3]
		key := fmt.Sprintf("zagree:z%d", i)
		args := []string{"ZADD", key}
		for j := range 200 {
			args = append(args, fmt.Sprintf("%d.%d", j%17, j), fmt.Sprintf("m%d", j))
		}
		mustAsk(t, addr, array(args...), ":200\r\n")
		mustAsk(t, addr, array("ZINCRBY", "zagree:shared", "0.1", fmt.Sprintf("n%d", i)), "")
		mustAsk(t, addr, array("ZADD", "zagree:shared", "GT", "CH", "5", "n0", "7", fmt.Sprintf("x%d", i)), "")
		for range 5 {
			mustAsk(t, addr, array("ZPOPMIN", key), "")
			mustAsk(t, addr, array("ZPOPMAX", key, "3"), "")
		}
		mustAsk(t, addr, array("EVAL", "local m = redis.call('zrandmember', KEYS[1], 5); redis.call('zrem', KEYS[1], unpack(m)); return redis.call('zcard', KEYS[1])", "1", key), ":175\r\n")
		mustAsk(t, addr, array("ZREMRANGEBYSCORE", key, "(3", "4"), "")
		c := dialRaw(t, addr)
		c.send(array("MULTI") + array("ZPOPMIN", key, "2") + array("ZREM", key, "m199") + array("ZRANGE", key, "0", "0") + array("EXEC"))
		if got := c.replies(5)[4]; !strings.HasPrefix(got, "*3\r\n") {
			t.Fatalf("EXEC: %q", got)
		}
	}
	tc.rc.WaitConverged(60 * time.Second)
	for _, key := range []string{"zagree:z0", "zagree:z1", "zagree:z2", "zagree:shared"} {
		var first string
		for i := range 3 {
			got := ask(t, tc.addrs[i], array("ZRANGE", key, "0", "-1", "WITHSCORES"))
			if i > 0 && got != first {
				t.Fatalf("node %d reads another %s:\n%q\n%q", i, key, got, first)
			}
			first = got
		}
	}
}
