package resp

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// blocked is how many clients wait in srv's blocking pops, and on how
// many keys.
func blocked(srv *Server) (waiters, keys int) {
	b := srv.blocks
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters, len(b.queues)
}

// waitBlocked waits until n clients are blocked on srv.
func waitBlocked(t *testing.T, srv *Server, n int) {
	t.Helper()
	testsupport.WaitFor(t, "blocked clients", 60*time.Second, func() bool { w, _ := blocked(srv); return w == n })
}

// TestBlockingPopAcrossNodes: BLPOP blocks on the node its client is
// connected to and is woken by a push through another node; two waiters
// on one node are served in the order they came, each its own element;
// waiters on two nodes get two different elements; a client that
// disconnects while blocked pops nothing; and a waiter outlives a leader
// kill and is woken by a push through the new leader's cluster.
func TestBlockingPopAcrossNodes(t *testing.T) {
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	b, c := (leader+1)%3, (leader+2)%3

	// A waiter on b, woken by a push through c.
	w := dialRaw(t, tc.addrs[b])
	w.send(array("BLPOP", "bq:a", "bq:other", "0"))
	waitBlocked(t, tc.srv[b], 1)
	if got := ask(t, tc.addrs[c], array("LPUSH", "bq:a", "x")); got != ":1\r\n" {
		t.Fatalf("LPUSH: %q", got)
	}
	w.expect("a push through another node", []string{"*2\r\n$4\r\nbq:a\r\n$1\r\nx\r\n"})
	if got := ask(t, tc.addrs[b], array("EXISTS", "bq:a")); got != ":0\r\n" {
		t.Fatalf("the popped list still exists: %q", got)
	}

	// Two waiters on b, in order: the first gets the first element.
	w1, w2 := dialRaw(t, tc.addrs[b]), dialRaw(t, tc.addrs[b])
	w1.send(array("BRPOP", "bq:fifo", "0"))
	waitBlocked(t, tc.srv[b], 1)
	w2.send(array("BRPOP", "bq:fifo", "0"))
	waitBlocked(t, tc.srv[b], 2)
	ask(t, tc.addrs[c], array("LPUSH", "bq:fifo", "e1", "e2")) // the list's tail is e1
	w1.expect("the first waiter", []string{"*2\r\n$7\r\nbq:fifo\r\n$2\r\ne1\r\n"})
	w2.expect("the second waiter", []string{"*2\r\n$7\r\nbq:fifo\r\n$2\r\ne2\r\n"})

	// Waiters on two nodes, one push of two elements: one each.
	wb, wc := dialRaw(t, tc.addrs[b]), dialRaw(t, tc.addrs[c])
	wb.send(array("BLPOP", "bq:two", "0"))
	wc.send(array("BLPOP", "bq:two", "0"))
	waitBlocked(t, tc.srv[b], 1)
	waitBlocked(t, tc.srv[c], 1)
	ask(t, tc.addrs[leader], array("RPUSH", "bq:two", "p", "q"))
	got := []string{wb.replies(1)[0], wc.replies(1)[0]}
	sort.Strings(got)
	if want := []string{"*2\r\n$6\r\nbq:two\r\n$1\r\np\r\n", "*2\r\n$6\r\nbq:two\r\n$1\r\nq\r\n"}; strings.Join(got, "") != strings.Join(want, "") {
		t.Fatalf("two waiters on two nodes got %q, want %q", got, want)
	}

	// A client that disconnects while blocked pops nothing.
	gone := dialRaw(t, tc.addrs[b])
	gone.send(array("BLPOP", "bq:gone", "0"))
	waitBlocked(t, tc.srv[b], 1)
	gone.nc.Close()
	testsupport.WaitFor(t, "the disconnected waiter freed", 30*time.Second, func() bool {
		w, k := blocked(tc.srv[b])
		return w == 0 && k == 0
	})
	ask(t, tc.addrs[c], array("RPUSH", "bq:gone", "kept"))
	if got := ask(t, tc.addrs[b], array("LRANGE", "bq:gone", "0", "-1")); got != "*1\r\n$4\r\nkept\r\n" {
		t.Fatalf("after a blocked client disconnected, the list is %q", got)
	}

	// A waiter on b outlives the leader's death.
	k := dialRaw(t, tc.addrs[b])
	k.send(array("BLPOP", "bq:kill", "0"))
	waitBlocked(t, tc.srv[b], 1)
	tc.srv[leader].Close()
	tc.rc.Stop(leader)
	tc.rc.WaitLeader(30 * time.Second)
	pc := dialRaw(t, tc.addrs[c])
	testsupport.WaitFor(t, "a push after the kill", 60*time.Second, func() bool {
		pc.send(array("RPUSH", "bq:kill", "after"))
		// CLUSTERDOWN while the new leader is elected, or a timeout
		// (applied or not): tried again until a push is acknowledged.
		return strings.HasPrefix(pc.replies(1)[0], ":")
	})
	k.nc.SetDeadline(time.Now().Add(60 * time.Second))
	k.expect("a push after the leader's kill", []string{"*2\r\n$7\r\nbq:kill\r\n$5\r\nafter\r\n"})
}
