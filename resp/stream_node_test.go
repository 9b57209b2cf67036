package resp

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// xreadReply is XREAD's RESP2 answer of one stream with one entry f=v.
func xreadReply(key, id string) string {
	return fmt.Sprintf("*1\r\n*2\r\n$%d\r\n%s\r\n*1\r\n*2\r\n$%d\r\n%s\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n", len(key), key, len(id), id)
}

// TestXReadBlocksAcrossNodes: XREAD BLOCK waits on the node its client
// is connected to and is woken by an XADD through another node; "$" is
// the last id at the call; many readers of one stream on every node are
// all served the one entry; a reader of one of several streams gets
// that one; a timeout answers a null array; readers on both followers
// outlive a leader kill and are woken by an XADD through the new
// leader's cluster.
func TestXReadBlocksAcrossNodes(t *testing.T) {
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	b, c := (leader+1)%3, (leader+2)%3

	mustAsk(t, tc.addrs[leader], array("XADD", "xb:s", "1-1", "f", "v"), "$3\r\n1-1\r\n")
	w := dialRaw(t, tc.addrs[b])
	w.send(array("XREAD", "BLOCK", "0", "STREAMS", "xb:s", "$"))
	waitBlocked(t, tc.srv[b], 1)
	mustAsk(t, tc.addrs[c], array("XADD", "xb:s", "2-1", "f", "v"), "$3\r\n2-1\r\n")
	if got := waitAnswer(w); got != xreadReply("xb:s", "2-1") {
		t.Fatalf("XREAD woken by an XADD through another node: %q", got)
	}

	// Many readers, on every node, of one stream not yet there.
	var readers []*rawConn
	for n := range 3 {
		for range 10 {
			r := dialRaw(t, tc.addrs[n])
			r.send(array("XREAD", "COUNT", "5", "BLOCK", "0", "STREAMS", "xb:none", "xb:many", "0", "$"))
			readers = append(readers, r)
		}
	}
	for n := range 3 {
		waitBlocked(t, tc.srv[n], 10)
	}
	mustAsk(t, tc.addrs[b], array("XADD", "xb:many", "7-7", "f", "v"), "$3\r\n7-7\r\n")
	for i, r := range readers {
		if got := waitAnswer(r); got != xreadReply("xb:many", "7-7") {
			t.Fatalf("reader %d: %q", i, got)
		}
	}
	for n := range 3 {
		waitBlocked(t, tc.srv[n], 0)
	}

	// A reader past an id the stream has not reached; an XADD below it
	// wakes nobody, one above it does.
	w = dialRaw(t, tc.addrs[c])
	w.send(array("XREAD", "BLOCK", "0", "STREAMS", "xb:s", "5-0"))
	waitBlocked(t, tc.srv[c], 1)
	mustAsk(t, tc.addrs[leader], array("XADD", "xb:s", "4-1", "f", "v"), "$3\r\n4-1\r\n")
	mustAsk(t, tc.addrs[leader], array("XADD", "xb:s", "5-1", "f", "v"), "$3\r\n5-1\r\n")
	if got := waitAnswer(w); got != xreadReply("xb:s", "5-1") {
		t.Fatalf("XREAD past 5-0: %q", got)
	}

	if got := ask(t, tc.addrs[b], array("XREAD", "BLOCK", "1", "STREAMS", "xb:s", "$")); got != "*-1\r\n" {
		t.Fatalf("XREAD BLOCK 1 with nothing new: %q", got)
	}

	// Readers on both followers outlive the leader's death.
	r1, r2 := dialRaw(t, tc.addrs[b]), dialRaw(t, tc.addrs[c])
	r1.send(array("XREAD", "BLOCK", "0", "STREAMS", "xb:k", "$"))
	r2.send(array("XREAD", "BLOCK", "0", "STREAMS", "xb:k", "0-0"))
	waitBlocked(t, tc.srv[b], 1)
	waitBlocked(t, tc.srv[c], 1)
	tc.srv[leader].Close()
	tc.rc.Stop(leader)
	now := tc.rc.WaitLeader(30 * time.Second)
	// An XADD whose fate the kill made unknown is tried again: its id is
	// given, so a second try is refused, never a second entry.
	testsupport.WaitFor(t, "an XADD after the kill", 60*time.Second, func() bool {
		got := ask(t, tc.addrs[c], array("XADD", "xb:k", "100-1", "f", "v"))
		return got == "$5\r\n100-1\r\n" || strings.Contains(got, "equal or smaller")
	})
	for i, r := range []*rawConn{r1, r2} {
		if got := waitAnswer(r); got != xreadReply("xb:k", "100-1") {
			t.Fatalf("reader %d after the leader's kill: %q", i, got)
		}
	}
	if got := retryAsk(t, tc.addrs[now], "XLEN", "xb:k"); got != ":1\r\n" {
		t.Fatalf("after the kill XLEN is %q", got)
	}
}

// TestStreamReplicasAgree: XADD * from twelve clients on every node at
// once (pipelined), with and without "~" trims, in scripts and in MULTI,
// and XDEL, leave every replica the same state hash and the same
// entries: ids given from the entries' stamps, never a node's clock,
// increasing, one per XADD.
func TestStreamReplicasAgree(t *testing.T) {
	tc := startCluster(t, func(c *Config) { c.OpTimeout = 2 * time.Minute }) // a shared machine's load is no timeout's
	tc.rc.WaitLeader(5 * time.Second)
	for n := range 3 { // every node knows the leader
		mustAsk(t, tc.addrs[n], array("SET", "xagree:warm", "1"), "+OK\r\n")
	}
	const perClient = 200
	var wg sync.WaitGroup
	var added atomic.Int64
	errs := make(chan string, 12)
	for n := range 3 {
		for k := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := dialRaw(t, tc.addrs[n])
				c.nc.SetDeadline(time.Now().Add(5 * time.Minute))
				var b strings.Builder
				for i := range perClient {
					b.WriteString(array("XADD", "xagree:all", "*", "n", strconv.Itoa(n), "i", strconv.Itoa(i)))
					b.WriteString(array("XADD", "xagree:trim", "MAXLEN", "~", "150", "*", "k", strconv.Itoa(k)))
				}
				b.WriteString(array("EVAL", "return redis.call('XADD', KEYS[1], '*', 'script', ARGV[1])", "1", "xagree:all", strconv.Itoa(n)))
				b.WriteString(array("MULTI") + array("XADD", "xagree:all", "*", "tx", "1") + array("XDEL", "xagree:trim", "0-1") + array("EXEC"))
				c.send(b.String())
				rs := c.replies(2*perClient + 5)
				for i, r := range rs[:2*perClient] {
					switch {
					case strings.HasPrefix(r, "$") && i%2 == 0:
						added.Add(1)
					case strings.HasPrefix(r, "$"), strings.HasPrefix(r, "-CLUSTERDOWN"): // an election under load: not applied
					default:
						errs <- fmt.Sprintf("node %d reply %d: %q", n, i, r)
						return
					}
				}
				// A script whose reads kept changing under it is refused
				// whole (scripts are optimistic); EXEC applies.
				if strings.HasPrefix(rs[2*perClient], "$") {
					added.Add(1)
				}
				if strings.HasPrefix(rs[2*perClient+4], "*2\r\n$") {
					added.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	tc.rc.WaitConverged(60 * time.Second)
	want := int(added.Load())
	for _, key := range []string{"xagree:all", "xagree:trim"} {
		var first string
		for i := range 3 {
			got := retryAsk(t, tc.addrs[i], "XRANGE", key, "-", "+")
			if i > 0 && got != first {
				t.Fatalf("node %d reads another %s", i, key)
			}
			first = got
		}
	}
	if got := retryAsk(t, tc.addrs[0], "XLEN", "xagree:all"); got != ":"+strconv.Itoa(want)+"\r\n" {
		t.Fatalf("XLEN: %q, want %d", got, want)
	}
	// The ids increase: XRANGE's order is the ids' and the stream's
	// last id is its last entry's.
	info := retryAsk(t, tc.addrs[1], "XINFO", "STREAM", "xagree:all")
	last := strings.Split(retryAsk(t, tc.addrs[1], "XREVRANGE", "xagree:all", "+", "-", "COUNT", "1"), "\r\n")
	if len(last) < 4 {
		t.Fatalf("XREVRANGE COUNT 1: %q", last)
	}
	lastID := last[3]
	if !strings.Contains(info, "last-generated-id\r\n$"+strconv.Itoa(len(lastID))+"\r\n"+lastID+"\r\n") {
		t.Fatalf("the last id %q is not the last entry's: %q", lastID, info)
	}
}
