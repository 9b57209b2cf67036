package resp

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// readGroupIDs is the ids an XREADGROUP's RESP2 reply delivers.
func readGroupIDs(t *testing.T, r string) []string {
	t.Helper()
	n, _ := parseResp(t, r)
	var ids []string
	for _, k := range n.items {
		if len(k.items) != 2 {
			t.Fatalf("an XREADGROUP reply that is not [key, entries]: %q", r)
		}
		for _, e := range k.items[1].items {
			ids = append(ids, e.items[0].s)
		}
	}
	return ids
}

// TestReadGroupBlocksAcrossNodes: XREADGROUP BLOCK waits on the node its
// client reached and is woken by an XADD through another node; six
// consumers blocked on three nodes share entries added one at a time and
// several at once, each entry delivered to one consumer once and pending
// for it; a blocked reader whose group is destroyed is told NOGROUP, one
// whose stream is deleted is told UNBLOCKED; and readers blocked on the
// followers outlive a leader kill and are served by an XADD through the
// new leader's cluster.
func TestReadGroupBlocksAcrossNodes(t *testing.T) {
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	b, c := (leader+1)%3, (leader+2)%3
	must := func(addr string, want string, args ...string) {
		t.Helper()
		if got := ask(t, addr, array(args...)); got != want {
			t.Fatalf("%q: %q, want %q", args, got, want)
		}
	}
	must(tc.addrs[leader], "+OK\r\n", "XGROUP", "CREATE", "rg:s", "g", "$", "MKSTREAM")

	w := dialRaw(t, tc.addrs[b])
	w.send(array("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "rg:s", ">"))
	waitBlocked(t, tc.srv[b], 1)
	must(tc.addrs[c], "$3\r\n1-1\r\n", "XADD", "rg:s", "1-1", "f", "v")
	if got := waitAnswer(w); got != "*1\r\n*2\r\n$4\r\nrg:s\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n" {
		t.Fatalf("XREADGROUP woken by an XADD through another node: %q", got)
	}
	if got := ask(t, tc.addrs[c], array("XPENDING", "rg:s", "g")); got != "*4\r\n:1\r\n$3\r\n1-1\r\n$3\r\n1-1\r\n*1\r\n*2\r\n$5\r\nalice\r\n$1\r\n1\r\n" {
		t.Fatalf("XPENDING after the woken read: %q", got)
	}

	// Six consumers on three nodes; ten entries, one at a time and then
	// several in one MULTI: each delivered once.
	var readers []*rawConn
	for n := range 3 {
		for i := range 2 {
			r := dialRaw(t, tc.addrs[n])
			readers = append(readers, r)
			r.send(array("XREADGROUP", "GROUP", "g", fmt.Sprintf("c%d%d", n, i), "COUNT", "1", "BLOCK", "0", "STREAMS", "rg:s", ">"))
		}
	}
	for n := range 3 {
		waitBlocked(t, tc.srv[n], 2)
	}
	seen := map[string]int{}
	for i := 2; i <= 4; i++ {
		ask(t, tc.addrs[i%3], array("XADD", "rg:s", fmt.Sprintf("%d-1", i), "n", fmt.Sprint(i)))
	}
	m := dialRaw(t, tc.addrs[leader])
	m.send(array("MULTI") + array("XADD", "rg:s", "5-1", "n", "5") + array("XADD", "rg:s", "6-1", "n", "6") + array("XADD", "rg:s", "7-1", "n", "7") + array("EXEC"))
	m.replies(5)
	for _, r := range readers {
		for _, id := range readGroupIDs(t, waitAnswer(r)) {
			seen[id]++
		}
	}
	want := map[string]int{"2-1": 1, "3-1": 1, "4-1": 1, "5-1": 1, "6-1": 1, "7-1": 1}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("six blocked consumers were delivered %v, want each entry once: %v", seen, want)
	}
	if got := ask(t, tc.addrs[b], array("XPENDING", "rg:s", "g")); !strings.HasPrefix(got, "*4\r\n:7\r\n") {
		t.Fatalf("XPENDING after the six: %q, want 7 pending", got)
	}

	// The group destroyed, the stream deleted: Redis's errors.
	w = dialRaw(t, tc.addrs[b])
	w.send(array("XREADGROUP", "GROUP", "g", "x", "BLOCK", "0", "STREAMS", "rg:s", ">"))
	waitBlocked(t, tc.srv[b], 1)
	must(tc.addrs[c], ":1\r\n", "XGROUP", "DESTROY", "rg:s", "g")
	if got := waitAnswer(w); got != "-NOGROUP the consumer group this client was blocked on no longer exists\r\n" {
		t.Fatalf("a reader whose group was destroyed: %q", got)
	}
	must(tc.addrs[c], "+OK\r\n", "XGROUP", "CREATE", "rg:s", "g", "$")
	w.send(array("XREADGROUP", "GROUP", "g", "x", "BLOCK", "0", "STREAMS", "rg:s", ">"))
	waitBlocked(t, tc.srv[b], 1)
	must(tc.addrs[leader], ":1\r\n", "DEL", "rg:s")
	if got := waitAnswer(w); got != "-UNBLOCKED the stream key no longer exists\r\n" {
		t.Fatalf("a reader whose stream was deleted: %q", got)
	}

	// Readers on both followers outlive the leader's death.
	must(tc.addrs[leader], "+OK\r\n", "XGROUP", "CREATE", "rg:k", "g", "$", "MKSTREAM")
	r1, r2 := dialRaw(t, tc.addrs[b]), dialRaw(t, tc.addrs[c])
	r1.send(array("XREADGROUP", "GROUP", "g", "r1", "COUNT", "1", "BLOCK", "0", "STREAMS", "rg:k", ">"))
	r2.send(array("XREADGROUP", "GROUP", "g", "r2", "COUNT", "1", "BLOCK", "0", "STREAMS", "rg:k", ">"))
	waitBlocked(t, tc.srv[b], 1)
	waitBlocked(t, tc.srv[c], 1)
	tc.srv[leader].Close()
	tc.rc.Stop(leader)
	now := tc.rc.WaitLeader(30 * time.Second)
	// An XADD whose fate the kill made unknown is tried again: explicit
	// ids make a second try refused, never a second entry.
	for i, addr := range []string{tc.addrs[c], tc.addrs[b]} {
		id := fmt.Sprintf("%d-1", i+1)
		testsupport.WaitFor(t, "an XADD after the kill", 60*time.Second, func() bool {
			got := ask(t, addr, array("XADD", "rg:k", id, "k", "v"))
			return strings.HasPrefix(got, "$") || strings.Contains(got, "equal or smaller")
		})
	}
	got := append(readGroupIDs(t, waitAnswer(r1)), readGroupIDs(t, waitAnswer(r2))...)
	slices.Sort(got)
	if fmt.Sprint(got) != "[1-1 2-1]" {
		t.Fatalf("after the leader's kill the two readers got %v, want 1-1 and 2-1 once each", got)
	}
	if got := retryAsk(t, tc.addrs[now], "XPENDING", "rg:k", "g"); !strings.HasPrefix(got, "*4\r\n:2\r\n$3\r\n1-1\r\n$3\r\n2-1\r\n") {
		t.Fatalf("XPENDING after the kill: %q", got)
	}
}
