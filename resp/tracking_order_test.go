package resp

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/raftstore"
	"github.com/idemgate/idemgate/storeapi"
)

// TestTrackingStartsAfterOwnWrites: a client on a follower writes
// (FLUSHALL, then a SET, forwarded to the leader and acknowledged before
// this node applied them), turns tracking on (BCAST, RESP3) and has
// another node write a key; the first invalidation it is pushed must be
// that key's: not an "everything" for its own FLUSHALL, nor its own SET's
// key, which came before tracking began (Redis's order, the tcl units'
// "Adding prefixes to BCAST mode works" and their neighbours). Twenty
// rounds: without the barrier at CLIENT TRACKING ON a follower lags its
// own client's acknowledged writes often enough to fail.
func TestTrackingStartsAfterOwnWrites(t *testing.T) {
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	follower, other := tc.addrs[(leader+1)%3], tc.addrs[(leader+2)%3]
	for round := range 20 {
		c := dialRaw(t, follower)
		c.send(array("HELLO", "3"))
		c.replies(1)
		c.send(array("FLUSHALL") + array("SET", "pre:own", "1") + array("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "pre:"))
		if got := c.replies(3); got[0] != "+OK\r\n" || got[2] != "+OK\r\n" {
			t.Fatalf("round %d: FLUSHALL, SET, CLIENT TRACKING: %q", round, got)
		}
		key := fmt.Sprint("pre:other", round)
		mustAsk(t, other, array("SET", key, "1"), "+OK\r\n")
		want := fmt.Sprintf(">2\r\n$10\r\ninvalidate\r\n*1\r\n$%d\r\n%s\r\n", len(key), key)
		if got := c.replies(1)[0]; got != want {
			t.Fatalf("round %d: first push %q, want %q", round, got, want)
		}
		c.nc.Close()
	}
}

// TestTrackingInfo: INFO's figures of the client-side caching table, as
// Redis's (its tracking unit's "Tracking info is correct"): the keys
// remembered, their readers, the BCAST prefixes, the tracking clients;
// a FLUSHALL empties the table.
func TestTrackingInfo(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", nil)
	a, b, c := dialRaw(t, srv.Addr()), dialRaw(t, srv.Addr()), dialRaw(t, srv.Addr())
	a.send(array("CLIENT", "TRACKING", "on") + array("GET", "key1") + array("GET", "key2"))
	a.replies(3)
	b.send(array("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "prefix:", "PREFIX", "other:"))
	b.replies(1)
	c.send(array("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "prefix:") + array("CLIENT", "TRACKING", "on") + array("GET", "key1"))
	c.replies(3)
	info := func(want ...string) {
		t.Helper()
		got := ask(t, srv.Addr(), array("INFO"))
		for _, w := range want {
			if !strings.Contains(got, "\r\n"+w+"\r\n") {
				t.Fatalf("INFO lacks %q:\n%s", w, got)
			}
		}
	}
	// c's second CLIENT TRACKING on failed (BCAST cannot be switched off
	// so): c stays BCAST, reads nothing into the table.
	info("tracking_clients:3", "tracking_total_keys:2", "tracking_total_items:2", "tracking_total_prefixes:2")
	mustAsk(t, srv.Addr(), array("FLUSHALL"), "+OK\r\n")
	info("tracking_total_keys:0", "tracking_total_items:0")
}

// TestNoloopReadOutlivesEarlierWrite: a NOLOOP connection's own write that
// this node applies only after the connection's next read was remembered
// (a follower applies what the leader committed a moment after it
// acknowledged it; rueidislock's waiter on a follower met it: its release,
// applied late, dropped its next attempt's read, and the holder's release
// after was never pushed to it) is not pushed to it and leaves that read
// remembered: another's write after is pushed. A read remembered before
// the write was sent is forgotten with it, as in Redis. The late apply is
// the state machine's feed, called as the apply path calls it.
func TestNoloopReadOutlivesEarlierWrite(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", nil)
	c := dialRaw(t, srv.Addr())
	c.send(array("HELLO", "3") + array("CLIENT", "TRACKING", "on", "NOLOOP") + array("CLIENT", "ID"))
	id, err := strconv.ParseInt(strings.Trim(c.replies(3)[2], ":\r\n"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	cc := srv.connByID(id)
	own := func() command.ReqID {
		rid := storeapi.NewRequestID()
		srv.track.own(cc, []command.ReqID{rid}, false)
		return rid
	}
	late := func(key string, by command.ReqID) {
		srv.KVChanged([][]byte{command.KeyspaceKey(0, []byte(key))}, []command.ReqID{by}, false)
	}

	// Sent before the read, applied after it was remembered.
	sent := own()
	c.send(array("GET", "late"))
	c.expect("GET", []string{"_\r\n"})
	late("late", sent)
	mustAsk(t, srv.Addr(), array("SET", "late", "2"), "+OK\r\n")
	c.expect("another's write after its own late one", []string{pushOf("late")})

	// Sent after the read: the read goes with it. Had its key been pushed,
	// the push would come ahead of the marker's, whose change came after.
	c.send(array("GET", "early") + array("GET", "marker"))
	c.expect("GETs", []string{"_\r\n", "_\r\n"})
	late("early", own())
	mustAsk(t, srv.Addr(), array("SET", "early", "2"), "+OK\r\n")
	mustAsk(t, srv.Addr(), array("SET", "marker", "2"), "+OK\r\n")
	c.expect("the marker's push alone: its read went with its own write", []string{pushOf("marker")})
}

// TestTrackingScriptAfterAnothersWrite: a tracking client on a follower
// runs a script (sent to the leader) right after another client's write
// of a key it names was acknowledged; the follower learns of that write
// only with the script's own entry (Raft's commit tick is a second long
// here), while the script's keys are remembered for the client. The write
// came before the script: it is not pushed (the unit's "Tracking only
// occurs for scripts when a command calls a read-only command" read such
// a push as the next command's reply). A push of it would come ahead of
// a marker key's, changed after.
func TestTrackingScriptAfterAnothersWrite(t *testing.T) {
	tc := startClusterWith(t, func(c *raftstore.Config) { c.CommitTimeout = time.Second }, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	follower, other := tc.addrs[(leader+1)%3], tc.addrs[(leader+2)%3]
	r := dialRaw(t, follower)
	r.nc.SetDeadline(time.Now().Add(time.Minute))
	r.send(array("HELLO", "3") + array("CLIENT", "TRACKING", "on"))
	r.replies(2)
	for round := range 3 {
		key, marker := fmt.Sprint("{s}key", round), fmt.Sprint("{s}marker", round)
		mustAsk(t, other, array("MSET", key, "1"), "+OK\r\n")
		r.send(array("EVAL", "redis.call('set', KEYS[1] .. 'x', 'bar')", "1", key) + array("GET", marker))
		r.expect("EVAL, GET", []string{"_\r\n", "_\r\n"})
		mustAsk(t, other, array("SET", marker, "1"), "+OK\r\n")
		r.expect(fmt.Sprintf("round %d: the marker's push, and none before it", round), []string{pushOf(marker)})
	}
}
