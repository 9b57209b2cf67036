package resp

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestBlockingZPopsAcrossNodes: BZPOPMIN, BZPOPMAX and BZMPOP block on
// the follower their client is connected to and are woken by a ZADD
// through another node, each member popped once; a ZADD wakes the
// key's sorted set waiter and leaves its list waiter blocked (and a
// push, later, wakes that one); and waiters on both followers outlive a
// leader kill and are woken by a ZADD through the new leader's cluster.
func TestBlockingZPopsAcrossNodes(t *testing.T) {
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	b, c := (leader+1)%3, (leader+2)%3
	zrange := func(key string) string {
		return ask(t, tc.addrs[leader], array("ZRANGE", key, "0", "-1", "WITHSCORES"))
	}

	w := dialRaw(t, tc.addrs[b])
	w.send(array("BZPOPMIN", "bz:none", "bz:a", "0"))
	waitBlocked(t, tc.srv[b], 1)
	if got := ask(t, tc.addrs[c], array("ZADD", "bz:a", "2", "y", "1", "x")); got != ":2\r\n" {
		t.Fatalf("ZADD: %q", got)
	}
	if got := waitAnswer(w); got != "*3\r\n$4\r\nbz:a\r\n$1\r\nx\r\n$1\r\n1\r\n" {
		t.Fatalf("BZPOPMIN woken by a ZADD through another node: %q", got)
	}
	if got := zrange("bz:a"); got != "*2\r\n$1\r\ny\r\n$1\r\n2\r\n" {
		t.Fatalf("after BZPOPMIN the sorted set is %q", got)
	}

	w = dialRaw(t, tc.addrs[c])
	w.send(array("BZPOPMAX", "bz:m", "0"))
	waitBlocked(t, tc.srv[c], 1)
	ask(t, tc.addrs[b], array("ZADD", "bz:m", "1", "lo", "9", "hi"))
	if got := waitAnswer(w); got != "*3\r\n$4\r\nbz:m\r\n$2\r\nhi\r\n$1\r\n9\r\n" {
		t.Fatalf("BZPOPMAX: %q", got)
	}

	w = dialRaw(t, tc.addrs[b])
	w.send(array("BZMPOP", "0", "2", "bz:p1", "bz:p2", "MIN", "COUNT", "2"))
	waitBlocked(t, tc.srv[b], 1)
	ask(t, tc.addrs[leader], array("ZADD", "bz:p2", "3", "c", "1", "a", "2", "b"))
	if got := waitAnswer(w); got != "*2\r\n$5\r\nbz:p2\r\n*2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n" {
		t.Fatalf("BZMPOP: %q", got)
	}
	if got := zrange("bz:p2"); got != "*2\r\n$1\r\nc\r\n$1\r\n3\r\n" {
		t.Fatalf("after BZMPOP COUNT 2 of 3 the sorted set is %q", got)
	}

	// A list waiter first, a sorted set waiter second, on one key: a ZADD
	// wakes the second; the first waits on, for a push.
	lw, zw := dialRaw(t, tc.addrs[c]), dialRaw(t, tc.addrs[c])
	lw.send(array("BLPOP", "bz:both", "0"))
	waitBlocked(t, tc.srv[c], 1)
	zw.send(array("BZPOPMIN", "bz:both", "0"))
	waitBlocked(t, tc.srv[c], 2)
	ask(t, tc.addrs[b], array("ZADD", "bz:both", "5", "m"))
	if got := waitAnswer(zw); got != "*3\r\n$7\r\nbz:both\r\n$1\r\nm\r\n$1\r\n5\r\n" {
		t.Fatalf("BZPOPMIN behind a BLPOP on one key: %q", got)
	}
	waitBlocked(t, tc.srv[c], 1)
	ask(t, tc.addrs[b], array("RPUSH", "bz:both", "e"))
	if got := waitAnswer(lw); got != "*2\r\n$7\r\nbz:both\r\n$1\r\ne\r\n" {
		t.Fatalf("BLPOP after the sorted set's waiter: %q", got)
	}

	// Waiters on both followers outlive the leader's death.
	k1, k2 := dialRaw(t, tc.addrs[b]), dialRaw(t, tc.addrs[c])
	k1.send(array("BZPOPMIN", "bz:k", "0"))
	k2.send(array("BZMPOP", "0", "1", "bz:k2", "MAX"))
	waitBlocked(t, tc.srv[b], 1)
	waitBlocked(t, tc.srv[c], 1)
	tc.srv[leader].Close()
	tc.rc.Stop(leader)
	now := tc.rc.WaitLeader(30 * time.Second)
	// A ZADD whose fate the kill made unknown is tried again: it adds
	// the member again at most, never pops it twice.
	testsupport.WaitFor(t, "a ZADD after the kill", 60*time.Second, func() bool {
		return strings.HasPrefix(ask(t, tc.addrs[c], array("ZADD", "bz:k", "1", "after")), ":")
	})
	testsupport.WaitFor(t, "a second ZADD after the kill", 60*time.Second, func() bool {
		return strings.HasPrefix(ask(t, tc.addrs[b], array("ZADD", "bz:k2", "7", "later")), ":")
	})
	if got := waitAnswer(k1); got != "*3\r\n$4\r\nbz:k\r\n$5\r\nafter\r\n$1\r\n1\r\n" {
		t.Fatalf("BZPOPMIN after the leader's kill: %q", got)
	}
	if got := waitAnswer(k2); got != "*2\r\n$5\r\nbz:k2\r\n*1\r\n*2\r\n$5\r\nlater\r\n$1\r\n7\r\n" {
		t.Fatalf("BZMPOP after the leader's kill: %q", got)
	}
	if got := retryAsk(t, tc.addrs[now], "EXISTS", "bz:k", "bz:k2"); got != ":0\r\n" {
		t.Fatalf("after the kill the popped sorted sets are still there: EXISTS %q", got)
	}
}

// TestBlockingZPopRace: six clients, two on each node, block in BZPOPMIN
// on one key; six members added through every node, one at a time and
// two at once, are each delivered to exactly one client, none twice,
// none lost, and the key is gone.
func TestBlockingZPopRace(t *testing.T) {
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	var waiters []*rawConn
	for n := range 3 {
		for range 2 {
			w := dialRaw(t, tc.addrs[n])
			w.send(array("BZPOPMIN", "zrace:k", "0"))
			waiters = append(waiters, w)
		}
	}
	for n := range 3 {
		waitBlocked(t, tc.srv[n], 2)
	}
	adds := [][]string{{"0", "e0"}, {"1", "e1"}, {"2", "e2", "3", "e3"}, {"4", "e4"}, {"5", "e5"}}
	for i, a := range adds {
		if got := retryAsk(t, tc.addrs[i%3], append([]string{"ZADD", "zrace:k"}, a...)...); !strings.HasPrefix(got, ":") {
			t.Fatalf("ZADD %v: %q", a, got)
		}
	}
	var got []string
	for _, w := range waiters {
		r := waitAnswer(w)
		parts := strings.Split(r, "\r\n") // *3 $7 zrace:k $2 eN $1 N
		if len(parts) < 7 || parts[0] != "*3" || parts[2] != "zrace:k" || parts[6] != parts[4][1:] {
			t.Fatalf("a waiter answered %q", r)
		}
		got = append(got, parts[4])
	}
	slices.Sort(got)
	want := []string{"e0", "e1", "e2", "e3", "e4", "e5"}
	if !slices.Equal(got, want) {
		t.Fatalf("six waiters got %v, want each of %v once", got, want)
	}
	if r := retryAsk(t, tc.addrs[leader], "EXISTS", "zrace:k"); r != ":0\r\n" {
		t.Fatalf("after six pops the key is still there: %q", r)
	}
	t.Logf("BZPOPMIN race: 6 waiters on 3 nodes, 6 members: %s delivered, each once", fmt.Sprint(len(got)))
}
