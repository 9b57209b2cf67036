package resp

import (
	"fmt"
	"strings"
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
