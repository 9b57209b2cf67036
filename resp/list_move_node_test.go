package resp

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// retryAsk asks until the answer is not CLUSTERDOWN (no leader yet, and
// nothing done), and returns it.
func retryAsk(t *testing.T, addr string, args ...string) string {
	t.Helper()
	var got string
	testsupport.WaitFor(t, "an answer that is not CLUSTERDOWN", 60*time.Second, func() bool {
		got = ask(t, addr, array(args...))
		return !strings.HasPrefix(got, "-CLUSTERDOWN")
	})
	return got
}

// waitAnswer reads one reply of a blocked client, waiting up to a minute
// (a hang, not a timing claim).
func waitAnswer(c *rawConn) string {
	c.t.Helper()
	c.nc.SetDeadline(time.Now().Add(120 * time.Second))
	return c.replies(1)[0]
}

// TestBlockingMovesAcrossNodes: BLMOVE, BRPOPLPUSH and BLMPOP block on
// the node their client is connected to and are woken by a push through
// another node; the element lands in the destination, once; a list moved
// onto itself is rotated; a chain of moves (one waiter's destination is
// the next one's source) carries an element through; and waiters outlive
// a leader kill and are woken by a push through the new leader's cluster.
func TestBlockingMovesAcrossNodes(t *testing.T) {
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	b, c := (leader+1)%3, (leader+2)%3
	lrange := func(key string) string { return ask(t, tc.addrs[leader], array("LRANGE", key, "0", "-1")) }

	w := dialRaw(t, tc.addrs[b])
	w.send(array("BLMOVE", "bm:s", "bm:d", "RIGHT", "LEFT", "0"))
	waitBlocked(t, tc.srv[b], 1)
	if got := ask(t, tc.addrs[c], array("RPUSH", "bm:s", "x")); got != ":1\r\n" {
		t.Fatalf("RPUSH: %q", got)
	}
	if got := waitAnswer(w); got != "$1\r\nx\r\n" {
		t.Fatalf("BLMOVE woken by a push through another node: %q", got)
	}
	if got, src := lrange("bm:d"), lrange("bm:s"); got != "*1\r\n$1\r\nx\r\n" || src != "*0\r\n" {
		t.Fatalf("after BLMOVE the destination is %q, the source %q", got, src)
	}

	w = dialRaw(t, tc.addrs[c])
	w.send(array("BRPOPLPUSH", "bm:s2", "bm:d2", "0"))
	waitBlocked(t, tc.srv[c], 1)
	ask(t, tc.addrs[b], array("LPUSH", "bm:s2", "p", "q")) // the tail is p
	if got := waitAnswer(w); got != "$1\r\np\r\n" {
		t.Fatalf("BRPOPLPUSH: %q", got)
	}
	if d, s := lrange("bm:d2"), lrange("bm:s2"); d != "*1\r\n$1\r\np\r\n" || s != "*1\r\n$1\r\nq\r\n" {
		t.Fatalf("after BRPOPLPUSH the destination is %q, the source %q", d, s)
	}

	w = dialRaw(t, tc.addrs[b])
	w.send(array("BLMPOP", "0", "2", "bm:m1", "bm:m2", "LEFT", "COUNT", "2"))
	waitBlocked(t, tc.srv[b], 1)
	ask(t, tc.addrs[leader], array("RPUSH", "bm:m2", "a", "b", "c"))
	if got := waitAnswer(w); got != "*2\r\n$5\r\nbm:m2\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n" {
		t.Fatalf("BLMPOP: %q", got)
	}
	if got := lrange("bm:m2"); got != "*1\r\n$1\r\nc\r\n" {
		t.Fatalf("after BLMPOP COUNT 2 of 3 the list is %q", got)
	}

	w = dialRaw(t, tc.addrs[b])
	w.send(array("BLMOVE", "bm:r", "bm:r", "LEFT", "RIGHT", "0"))
	waitBlocked(t, tc.srv[b], 1)
	ask(t, tc.addrs[c], array("RPUSH", "bm:r", "1", "2"))
	if got := waitAnswer(w); got != "$1\r\n1\r\n" {
		t.Fatalf("BLMOVE of a list onto itself: %q", got)
	}
	if got := lrange("bm:r"); got != "*2\r\n$1\r\n2\r\n$1\r\n1\r\n" {
		t.Fatalf("a list moved onto itself is %q, want 2 1", got)
	}

	// A chain: the first waiter's destination is the second's source.
	first, second := dialRaw(t, tc.addrs[b]), dialRaw(t, tc.addrs[c])
	first.send(array("BLMOVE", "bm:c1", "bm:c2", "LEFT", "LEFT", "0"))
	second.send(array("BLMOVE", "bm:c2", "bm:c3", "LEFT", "LEFT", "0"))
	waitBlocked(t, tc.srv[b], 1)
	waitBlocked(t, tc.srv[c], 1)
	ask(t, tc.addrs[leader], array("LPUSH", "bm:c1", "e"))
	if g1, g2 := waitAnswer(first), waitAnswer(second); g1 != "$1\r\ne\r\n" || g2 != "$1\r\ne\r\n" {
		t.Fatalf("a chain of moves answered %q and %q", g1, g2)
	}
	if got := ask(t, tc.addrs[leader], array("EXISTS", "bm:c1", "bm:c2")); got != ":0\r\n" || lrange("bm:c3") != "*1\r\n$1\r\ne\r\n" {
		t.Fatalf("after the chain: EXISTS c1 c2 %q, c3 %q", got, lrange("bm:c3"))
	}

	// Waiters on both followers outlive the leader's death.
	mv, mp := dialRaw(t, tc.addrs[b]), dialRaw(t, tc.addrs[c])
	mv.send(array("BLMOVE", "bm:k", "bm:kd", "LEFT", "RIGHT", "0"))
	mp.send(array("BLMPOP", "0", "1", "bm:k2", "RIGHT"))
	waitBlocked(t, tc.srv[b], 1)
	waitBlocked(t, tc.srv[c], 1)
	tc.srv[leader].Close()
	tc.rc.Stop(leader)
	now := tc.rc.WaitLeader(30 * time.Second)
	// A push whose fate the kill made unknown is tried again: a second
	// element is possible, never a second move of one.
	testsupport.WaitFor(t, "a push after the kill", 60*time.Second, func() bool {
		return strings.HasPrefix(ask(t, tc.addrs[c], array("RPUSH", "bm:k", "after")), ":")
	})
	testsupport.WaitFor(t, "a second push after the kill", 60*time.Second, func() bool {
		return strings.HasPrefix(ask(t, tc.addrs[b], array("RPUSH", "bm:k2", "later")), ":")
	})
	if got := waitAnswer(mv); got != "$5\r\nafter\r\n" {
		t.Fatalf("BLMOVE after the leader's kill: %q", got)
	}
	if got := waitAnswer(mp); got != "*2\r\n$5\r\nbm:k2\r\n*1\r\n$5\r\nlater\r\n" {
		t.Fatalf("BLMPOP after the leader's kill: %q", got)
	}
	if got := retryAsk(t, tc.addrs[now], "LRANGE", "bm:kd", "0", "-1"); got != "*1\r\n$5\r\nafter\r\n" {
		t.Fatalf("after the kill the destination is %q", got)
	}
}

// TestBlockingMoveRace: six clients, two on each node, block in BLMOVE on
// one source; six elements pushed through every node, one at a time and
// two at once, are each delivered to exactly one client and are all in
// the destination, none twice, none lost. Then four clients block in
// BLMPOP ... COUNT 2 on one list and one push of five elements serves
// three of them (2, 2, 1), each element once; the fourth still waits,
// and leaves without popping when it disconnects.
func TestBlockingMoveRace(t *testing.T) {
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	var waiters []*rawConn
	for n := range 3 {
		for range 2 {
			w := dialRaw(t, tc.addrs[n])
			w.send(array("BLMOVE", "race:s", "race:d", "LEFT", "RIGHT", "0"))
			waiters = append(waiters, w)
		}
	}
	for n := range 3 {
		waitBlocked(t, tc.srv[n], 2)
	}
	pushes := [][]string{{"e0"}, {"e1"}, {"e2", "e3"}, {"e4"}, {"e5"}}
	for i, p := range pushes {
		if got := retryAsk(t, tc.addrs[i%3], append([]string{"RPUSH", "race:s"}, p...)...); !strings.HasPrefix(got, ":") {
			t.Fatalf("RPUSH %v: %q", p, got)
		}
	}
	var got []string
	for _, w := range waiters {
		r := waitAnswer(w)
		var n int
		var el string
		if _, err := fmt.Sscanf(r, "$%d\r\n%s\r\n", &n, &el); err != nil || n != len(el) {
			t.Fatalf("a waiter answered %q", r)
		}
		got = append(got, el)
	}
	slices.Sort(got)
	want := []string{"e0", "e1", "e2", "e3", "e4", "e5"}
	if !slices.Equal(got, want) {
		t.Fatalf("six waiters got %v, want each of %v once", got, want)
	}
	dst := retryAsk(t, tc.addrs[leader], "LRANGE", "race:d", "0", "-1")
	for _, e := range want {
		if strings.Count(dst, "\r\n"+e+"\r\n") != 1 {
			t.Fatalf("the destination %q holds %s other than once", dst, e)
		}
	}
	if !strings.HasPrefix(dst, "*6\r\n") || retryAsk(t, tc.addrs[leader], "EXISTS", "race:s") != ":0\r\n" {
		t.Fatalf("after six moves: destination %q, source still there", dst)
	}
	t.Logf("BLMOVE race: 6 waiters on 3 nodes, 6 elements: %d delivered, each once; destination holds 6", len(got))

	// More waiters than elements, each popping up to two.
	var mpop []*rawConn
	for i := range 4 {
		w := dialRaw(t, tc.addrs[i%3])
		w.send(array("BLMPOP", "0", "1", "race:m", "LEFT", "COUNT", "2"))
		mpop = append(mpop, w)
	}
	waitBlocked(t, tc.srv[0], 2)
	waitBlocked(t, tc.srv[1], 1)
	waitBlocked(t, tc.srv[2], 1)
	if r := retryAsk(t, tc.addrs[(leader+1)%3], "RPUSH", "race:m", "m0", "m1", "m2", "m3", "m4"); r != ":5\r\n" {
		t.Fatalf("RPUSH of five: %q", r)
	}
	// Three are served, which three is the nodes' race: each waiter's
	// reply is read as it comes, and the fourth is the one left.
	type answer struct {
		i     int
		reply string
		err   error
	}
	answers := make(chan answer, len(mpop))
	for i, w := range mpop {
		w.nc.SetDeadline(time.Now().Add(120 * time.Second)) // a hang, not a timing claim
		go func() {
			var b strings.Builder
			err := readFrame(w.br, &b)
			answers <- answer{i, b.String(), err}
		}()
	}
	var popped []string
	served := map[int]bool{}
	for range 3 {
		a := <-answers
		parts := strings.Split(a.reply, "\r\n") // *2 $6 race:m *n $2 mK ...
		if a.err != nil || len(parts) < 7 || parts[0] != "*2" || parts[2] != "race:m" {
			t.Fatalf("a BLMPOP waiter answered %q (%v)", a.reply, a.err)
		}
		for j := 5; j+1 < len(parts); j += 2 {
			popped = append(popped, parts[j])
		}
		served[a.i] = true
	}
	var still *rawConn
	for i, w := range mpop {
		if !served[i] {
			still = w
		}
	}
	slices.Sort(popped)
	if want := []string{"m0", "m1", "m2", "m3", "m4"}; !slices.Equal(popped, want) {
		t.Fatalf("BLMPOP waiters popped %v, want each of %v once", popped, want)
	}
	still.nc.Close()
	if a := <-answers; a.err == nil {
		t.Fatalf("the fourth BLMPOP waiter was answered %q, with nothing left to pop", a.reply)
	}
	testsupport.WaitFor(t, "the last waiter freed", 60*time.Second, func() bool {
		n := 0
		for i := range 3 {
			w, _ := blocked(tc.srv[i])
			n += w
		}
		return n == 0
	})
	retryAsk(t, tc.addrs[leader], "RPUSH", "race:m", "kept")
	if got := retryAsk(t, tc.addrs[leader], "LRANGE", "race:m", "0", "-1"); got != "*1\r\n$4\r\nkept\r\n" {
		t.Fatalf("after the last waiter left, the list is %q", got)
	}
	t.Logf("BLMPOP race: 4 waiters on 3 nodes, 5 elements: %d delivered to 3, each once; 1 left unserved", len(popped))
}
