package resp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestCollReplicasAgree: hashes and sets written through every node,
// random pops (SPOP, in MULTI and in a script too), moves and stores
// included, leave every replica in the same state (the state hash of
// each node's state machine, elements and all), and every node reads
// the same members.
func TestCollReplicasAgree(t *testing.T) {
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	for i := range 3 {
		addr := tc.addrs[(leader+i)%3]
		members := []string{"SADD", fmt.Sprintf("agree:s%d", i)}
		for j := range 200 {
			members = append(members, fmt.Sprintf("m%d", j))
		}
		mustAsk(t, addr, array(members...), ":200\r\n")
		mustAsk(t, addr, array("HSET", "agree:h", fmt.Sprintf("f%d", i), "v", "n", "1"), "")
		mustAsk(t, addr, array("HINCRBYFLOAT", "agree:h", "x", "0.1"), "")
		for range 5 {
			mustAsk(t, addr, array("SPOP", fmt.Sprintf("agree:s%d", i)), "")
			mustAsk(t, addr, array("SPOP", fmt.Sprintf("agree:s%d", i), "7"), "")
		}
		mustAsk(t, addr, array("SMOVE", fmt.Sprintf("agree:s%d", i), "agree:moved", "m1"), "")
		mustAsk(t, addr, array("EVAL", "redis.call('spop', KEYS[1], 3); return redis.call('scard', KEYS[1])", "1", fmt.Sprintf("agree:s%d", i)), "")
		c := dialRaw(t, addr)
		c.send(array("MULTI") + array("SPOP", fmt.Sprintf("agree:s%d", i), "2") + array("HDEL", "agree:h", "n") + array("EXEC"))
		if got := c.replies(4)[3]; !strings.HasPrefix(got, "*2\r\n") {
			t.Fatalf("EXEC: %q", got)
		}
	}
	mustAsk(t, tc.addrs[leader], array("SUNIONSTORE", "agree:u", "agree:s0", "agree:s1", "agree:s2"), "")
	mustAsk(t, tc.addrs[leader], array("SINTERSTORE", "agree:i", "agree:s0", "agree:s1"), "")
	tc.rc.WaitConverged(60 * time.Second)
	var first string
	for i := range 3 {
		got := ask(t, tc.addrs[i], array("SMEMBERS", "agree:u"))
		got = canonReply(t, got, "sorted")
		if i > 0 && got != first {
			t.Fatalf("node %d reads another union:\n%q\n%q", i, got, first)
		}
		first = got
	}
}

// mustAsk asks and, with want, checks the reply; a reply of no leader
// (a loaded machine's election) is asked again.
func mustAsk(t *testing.T, addr, req, want string) string {
	t.Helper()
	var got string
	testsupport.WaitFor(t, "an answer", 60*time.Second, func() bool {
		got = ask(t, addr, req)
		return !strings.HasPrefix(got, "-CLUSTERDOWN") && !strings.HasPrefix(got, "-TRYAGAIN")
	})
	if strings.HasPrefix(got, "-") || (want != "" && got != want) {
		t.Fatalf("%q: %q, want %q", req, got, want)
	}
	return got
}
