package resp

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// mgetRequest is MGET of keys prefix0..prefix(n-1), from first.
func mgetRequest(prefix string, first, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n$4\r\nMGET\r\n", n+1)
	for i := first; i < first+n; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(k), k)
	}
	return b.String()
}

const pushAll = ">2\r\n$10\r\ninvalidate\r\n_\r\n"

func pushOf(key string) string {
	return fmt.Sprintf(">2\r\n$10\r\ninvalidate\r\n*1\r\n$%d\r\n%s\r\n", len(key), key)
}

// waitUntil polls cond (bounded: 20 s) and fails the test if it never
// holds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTrackingHostile: what tracking does with a connection that tracks
// 100,000 keys, a node whose table is full, a client that never reads its
// pushes, a flood of invalidations for one connection, and a state the
// feed cannot account for.
func TestTrackingHostile(t *testing.T) {
	t.Run("a connection tracking 100k keys", func(t *testing.T) {
		srv := startServer(t, memstore.New(t), "mem", nil)
		c := dialRaw(t, srv.Addr())
		c.send("HELLO 3\r\nCLIENT TRACKING ON\r\n")
		c.replies(2)
		for i := 0; i < 100; i++ {
			c.send(mgetRequest("big:", i*1000, 1000))
		}
		c.replies(100)
		if n := srv.track.size(); n != 100_000 {
			t.Fatalf("tracked keys = %d, want 100000", n)
		}
		w := dialRaw(t, srv.Addr())
		w.send("SET big:4242 x\r\n")
		w.expect("SET", []string{"+OK\r\n"})
		c.expect("the write of a tracked key", []string{pushOf("big:4242")})
		if n := srv.track.size(); n != 99_999 {
			t.Fatalf("tracked keys after one invalidation = %d, want 99999", n)
		}
		c.nc.Close()
		waitUntil(t, "the closed connection stops the feed", func() bool { return !srv.KVWatching() })
	})

	t.Run("a full table forgets keys and invalidates them", func(t *testing.T) {
		srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.TrackingMaxKeys = 1000 })
		c := dialRaw(t, srv.Addr())
		c.send("HELLO 3\r\nCLIENT TRACKING ON\r\n")
		c.replies(2)
		c.send(mgetRequest("full:", 0, 3000))
		c.replies(1)
		if n := srv.track.size(); n != 1000 {
			t.Fatalf("tracked keys = %d, want the bound, 1000", n)
		}
		seen := map[string]bool{}
		for len(seen) < 2000 {
			p := c.replies(1)[0]
			if p == pushAll {
				break // the pending bound was passed: everything, which covers them
			}
			key := p[strings.LastIndex(p[:len(p)-2], "\n")+1 : len(p)-2]
			if !strings.HasPrefix(key, "full:") || seen[key] {
				t.Fatalf("push %q: not one of the evicted keys, or twice", p)
			}
			seen[key] = true
		}
	})

	t.Run("a client that never reads its pushes is closed; writes go on", func(t *testing.T) {
		srv := startServer(t, memstore.New(t), "mem", func(c *Config) {
			c.WriteTimeout = 300 * time.Millisecond
			c.TrackingMaxPending = 1 << 30 // no collapsing: the socket fills
		})
		startNeverReadingTracker(t, srv)
		// Its replies are never read, nor anything after them.
		waitUntil(t, "the slow client tracks", func() bool { return srv.KVWatching() })
		w := dialRaw(t, srv.Addr())
		val := strings.Repeat("v", 10)
		for round := 0; srv.track.active.Load() > 0; round++ {
			if round == 400 {
				t.Fatal("400 rounds of 100 writes of 1 KB keys and the slow client is still tracking")
			}
			var b strings.Builder
			fmt.Fprintf(&b, "*201\r\n$4\r\nMSET\r\n")
			for i := 0; i < 100; i++ {
				k := fmt.Sprintf("slow:%d:%d:%s", round, i, strings.Repeat("k", 1000))
				fmt.Fprintf(&b, "$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(val), val)
			}
			w.send(b.String())
			w.expect("MSET", []string{"+OK\r\n"})
		}
		waitUntil(t, "the slow client's connection is closed", func() bool { return srv.clients() == 1 })
		w.send("PING\r\n")
		w.expect("PING after", []string{"+PONG\r\n"})
	})

	t.Run("a client that never reads is closed though its pushes collapse", func(t *testing.T) {
		// At the default pending bound a flood of invalidations becomes
		// one small "everything" at a time: the socket's buffers need
		// not fill, so no write waits its timeout. What the client's
		// kernel acknowledges tells instead (peer.go).
		srv := startServer(t, memstore.New(t), "mem", func(c *Config) {
			c.WriteTimeout = 300 * time.Millisecond
			c.TrackingMaxPending = 2
		})
		startNeverReadingTracker(t, srv)
		waitUntil(t, "the slow client tracks", func() bool { return srv.KVWatching() })
		w := dialRaw(t, srv.Addr())
		for round := 0; srv.track.active.Load() > 0; round++ {
			if round == 3000 {
				t.Fatal("3000 rounds of writes, 3 minutes at most, and the slow client is still tracking")
			}
			var b strings.Builder
			fmt.Fprintf(&b, "*21\r\n$4\r\nMSET\r\n")
			for i := 0; i < 10; i++ {
				k := fmt.Sprintf("slow:%d:%s", i, strings.Repeat("k", 100))
				fmt.Fprintf(&b, "$%d\r\n%s\r\n$1\r\nv\r\n", len(k), k)
			}
			w.send(b.String())
			w.expect("MSET", []string{"+OK\r\n"})
			time.Sleep(time.Duration(min(round, 60)) * time.Millisecond)
		}
		waitUntil(t, "the slow client's connection is closed", func() bool { return srv.clients() == 1 })
		w.send("PING\r\n")
		w.expect("PING after", []string{"+PONG\r\n"})
	})

	t.Run("a flood for one connection collapses to one invalidate-everything", func(t *testing.T) {
		p := pushSink{max: 3, started: true, acct: account{b: &budget{max: 1 << 40}}} // no pusher: the test reads the queue
		for i := 0; i < 10; i++ {
			p.add([]byte(fmt.Sprint("k", i)), false, 0)
		}
		if !p.all || p.keys != nil {
			t.Fatalf("after 10 invalidations past a bound of 3: all %v, %d keys queued; want all, none", p.all, len(p.keys))
		}
		p = pushSink{max: 1 << 30, started: true, acct: account{b: &budget{max: 1 << 40}}}
		big := make([]byte, 1<<20)
		for i := 0; i < 5; i++ {
			p.add(big, false, 0)
		}
		if !p.all || p.keys != nil || p.bytes != 0 {
			t.Fatalf("after 5 MiB of keys: all %v, %d keys, %d bytes queued; want all, none", p.all, len(p.keys), p.bytes)
		}
	})

	t.Run("a redirection whose connection closed", func(t *testing.T) {
		srv := startServer(t, memstore.New(t), "mem", nil)
		target := dialRaw(t, srv.Addr())
		target.send("CLIENT ID\r\n")
		id := strings.TrimSuffix(strings.TrimPrefix(target.replies(1)[0], ":"), "\r\n")
		c := dialRaw(t, srv.Addr())
		c.send("HELLO 3\r\nCLIENT TRACKING ON REDIRECT " + id + "\r\nGET redir\r\n")
		c.replies(3)
		target.nc.Close()
		n, _ := strconv.ParseInt(id, 10, 64)
		waitUntil(t, "the target is gone", func() bool { return srv.connByID(n) == nil })
		w := dialRaw(t, srv.Addr())
		w.send("SET redir 1\r\n")
		w.expect("SET", []string{"+OK\r\n"})
		// Redis's push to the tracking connection itself (RESP3).
		c.expect("a write", []string{fmt.Sprintf(">2\r\n$21\r\ntracking-redir-broken\r\n:%s\r\n", id)})
		c.send("CLIENT GETREDIR\r\nCLIENT TRACKINGINFO\r\n")
		c.expect("GETREDIR", []string{":" + id + "\r\n", "%3\r\n$5\r\nflags\r\n~2\r\n$2\r\non\r\n$15\r\nbroken_redirect\r\n" +
			"$8\r\nredirect\r\n:" + id + "\r\n$8\r\nprefixes\r\n*0\r\n"}) // redis-server 7.0.15's, byte for byte
	})

	t.Run("a NOLOOP connection's writes that change nothing are held to a bound", func(t *testing.T) {
		srv := startServer(t, memstore.New(t), "mem", nil)
		c := dialRaw(t, srv.Addr())
		c.send("HELLO 3\r\nCLIENT TRACKING ON NOLOOP\r\nGET own\r\n")
		c.replies(3)
		// 10,000 deletes of keys that are not there: applied, but no
		// change names their ids, so none is let go as seen.
		var b strings.Builder
		for i := 0; i < 10_000; i++ {
			fmt.Fprintf(&b, "DEL gone:%d\r\n", i)
		}
		c.send(b.String())
		c.replies(10_000)
		loops := func() int { srv.track.mu.Lock(); defer srv.track.mu.Unlock(); return len(srv.track.loops) }
		if n := loops(); n != maxLoopIDs {
			t.Fatalf("ids held = %d, want the bound %d", n, maxLoopIDs)
		}
		// Its own write is still not pushed, nor held once seen.
		c.send("SET own 1\r\nPING\r\n")
		c.expect("its own write, then PING", []string{"+OK\r\n", "+PONG\r\n"})
		if n := loops(); n != maxLoopIDs-1 {
			t.Fatalf("ids held after a seen write = %d, want %d", n, maxLoopIDs-1)
		}
		c.send("CLIENT TRACKING OFF\r\n")
		c.expect("TRACKING OFF", []string{"+OK\r\n"})
		if n := loops(); n != 0 {
			t.Fatalf("ids held after TRACKING OFF = %d, want 0", n)
		}
		c.send("CLIENT TRACKING ON NOLOOP\r\nDEL gone:1\r\n")
		c.replies(2)
		c.nc.Close()
		waitUntil(t, "the closed connection's ids are let go", func() bool { return loops() == 0 })
	})

	t.Run("a change the feed cannot name invalidates everything", func(t *testing.T) {
		srv := startServer(t, memstore.New(t), "mem", nil)
		c := dialRaw(t, srv.Addr())
		c.send("HELLO 3\r\nCLIENT TRACKING ON\r\nGET lost\r\n")
		c.replies(3)
		b := dialRaw(t, srv.Addr())
		b.send("HELLO 3\r\nCLIENT TRACKING ON BCAST PREFIX x\r\n")
		b.replies(2)
		srv.KVChanged(nil, nil, true) // what a snapshot restore, or a flush, tells
		c.expect("everything", []string{pushAll})
		b.expect("everything", []string{pushAll})
		if n := srv.track.size(); n != 0 {
			t.Fatalf("tracked keys after everything = %d, want 0", n)
		}
	})
}

// startNeverReadingTracker connects to srv with the smallest receive
// buffer, turns BCAST tracking on, and never reads: its replies and
// pushes stay in the sockets. It is closed when the test ends.
func startNeverReadingTracker(t *testing.T, srv *Server) {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	nc, err := d.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	slow := &rawConn{t: t, nc: nc}
	slow.send("HELLO 3\r\nCLIENT TRACKING ON BCAST\r\n")
}
