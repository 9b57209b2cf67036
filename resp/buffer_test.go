package resp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	rtmetrics "runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// The B4 inputs of issue 34, on a 3-node cluster over loopback, each at
// the sizes and the listener's defaults: one MGET of 500 × 4 MiB
// arguments, 137 connections each holding MULTI + 2 × 4 MiB ECHO, 400
// CLIENT TRACKING BCAST connections that never read while keys change.
// Before the client buffer budget the first two held 2 GiB and 1.1 GiB of
// the process's heap; the trackers' queued pushes grew as theirs. After
// each: every node answers, the heap has grown by less than the bound, a
// write on one node is read on another.

// heapBytes is the heap's live objects, after a collection.
func heapBytes() int64 {
	runtime.GC()
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	rtmetrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// heapPeak samples the heap the last collection found live (what was
// held, not the garbage awaiting the next) every 20 ms until stop; stop
// returns the most seen.
func heapPeak() (stop func() int64) {
	var peak atomic.Int64
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		s := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			rtmetrics.Read(s)
			if v := int64(s[0].Value.Uint64()); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 { close(done); <-finished; return peak.Load() }
}

// clusterStillServes checks that every node answers PING, and that a
// write through one node is read through another.
func clusterStillServes(t *testing.T, tc *testCluster, tag string) {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	for i, a := range tc.addrs {
		if err := client(t, a).Ping(ctx).Err(); err != nil {
			t.Fatalf("node %d after %s: PING: %v", i, tag, err)
		}
	}
	key := "after:" + tag
	// A storm on two shared cores may have cost the leader its term: the
	// write waits (bounded) for the next one.
	var err error
	testsupport.WaitFor(t, "a leader to take a write after "+tag, 20*time.Second, func() bool {
		err = client(t, tc.addrs[1]).Set(ctx, key, tag, 0).Err()
		return err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN")
	})
	if err != nil {
		t.Fatalf("SET on node 1 after %s: %v", tag, err)
	}
	var got string
	testsupport.WaitFor(t, "a leader to read after "+tag, 20*time.Second, func() bool {
		got, err = client(t, tc.addrs[2]).Get(ctx, key).Result()
		return err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN")
	})
	if err != nil || got != tag {
		t.Fatalf("GET on node 2 after %s = %q, %v; want %q", tag, got, err, tag)
	}
}

// heapBound is how far the heap may grow under one B4 input at the
// defaults: the node's client buffer budget, the connections' own
// allowance and buffers, and room for the collector's lag.
func heapBound(conns int) int64 {
	cfg := DefaultConfig()
	return int64(cfg.MaxClientBuffer) + int64(conns)*(connAllowance+64<<10) + 96<<20
}

// TestB4HugeMGet: one MGET of 500 arguments of 4 MiB (2 GiB) is refused
// at the request cap once its first 8 MiB are read, and the connection
// closed; before, the node read all 2 GiB.
func TestB4HugeMGet(t *testing.T) {
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(10 * time.Second)
	addr := tc.addrs[(leader+1)%3]
	before, rss0 := heapBytes(), readMem(t).rss
	stop := heapPeak()

	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(120 * time.Second))
	arg := []byte(strings.Repeat("k", 4<<20))
	go func() {
		// Stops at the first write the server refuses (it closed).
		if _, err := fmt.Fprintf(nc, "*501\r\n$4\r\nMGET\r\n"); err != nil {
			return
		}
		for i := 0; i < 500; i++ {
			if _, err := io.WriteString(nc, fmt.Sprintf("$%d\r\n", len(arg))); err != nil {
				return
			}
			if _, err := nc.Write(arg); err != nil {
				return
			}
			if _, err := io.WriteString(nc, "\r\n"); err != nil {
				return
			}
		}
	}()
	got, _ := io.ReadAll(nc)
	peak := stop()
	t.Logf("MGET of 500 × 4 MiB: heap %d MiB before, peak %d MiB", before>>20, peak>>20)
	want := fmt.Sprintf("-ERR Protocol error: too big request: its arguments are over %d bytes\r\n", DefaultConfig().MaxRequest)
	if string(got) != want {
		t.Errorf("MGET of 500 × 4 MiB: read %q, want %q and the close", clipString(string(got)), want)
	}
	if grew := peak - before; grew > heapBound(1) {
		t.Fatalf("the heap grew by %d MiB for one MGET, bound %d MiB", grew>>20, heapBound(1)>>20)
	}
	t.Logf("RSS %d MiB before, %d MiB after", rss0>>20, readMem(t).rss>>20)
	clusterStillServes(t, tc, "huge-mget")
}

// TestB4MultiHolders: 137 connections each queue MULTI + 2 × 4 MiB ECHO
// and hold them; those past the node's budget are answered the budget's
// error and closed, the others' transactions stay queued and EXEC.
func TestB4MultiHolders(t *testing.T) {
	// 137 × 8 MiB sent at once can take longer than ReadTimeout to arrive
	// on two shared cores (or under -race), and the holders then wait
	// past IdleTimeout: the budget is the default.
	tc := startCluster(t, func(c *Config) { c.ReadTimeout, c.IdleTimeout = 2*time.Minute, 5*time.Minute })
	leader := tc.rc.WaitLeader(10 * time.Second)
	addr := tc.addrs[(leader+1)%3]
	const conns = 137
	before, rss0 := heapBytes(), readMem(t).rss
	stop := heapPeak()
	// Each ECHO's argument leaves room for the command's name within
	// MaxTxBytes: both are queued unless the budget refuses them.
	arg := strings.Repeat("e", 4<<20-64)
	// One []byte for every write: io.WriteString of a string to a
	// net.Conn copies it, and 274 copies of 4 MiB would be the test's
	// heap, not the node's.
	echo := []byte(fmt.Sprintf("*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n", len(arg), arg))
	// Each connection sends, then reads its replies (and, when refused,
	// whether it was closed) at once: a holder waiting for the others to
	// finish sending would pass its idle timeout on a slow machine.
	full := "+OK\r\n+QUEUED\r\n+QUEUED\r\n"
	refusal := "-" + msgBudget + "\r\n"
	type outcome struct {
		replies string
		closed  bool
	}
	ncs := make([]net.Conn, conns)
	outs := make([]outcome, conns)
	var wg sync.WaitGroup
	for i := range ncs {
		nc, err := net.DialTimeout("tcp", addr, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(5 * time.Minute))
		ncs[i] = nc
		wg.Add(1)
		go func() {
			defer wg.Done()
			go func() { // stops at the first write the server refuses
				io.WriteString(nc, "MULTI\r\n")
				nc.Write(echo)
				nc.Write(echo)
			}()
			r := &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
			var got []string
			for len(got) < 3 {
				var b strings.Builder
				if err := readFrame(r.br, &b); err != nil {
					break
				}
				if got = append(got, b.String()); strings.HasPrefix(b.String(), "-") {
					break
				}
			}
			outs[i].replies = strings.Join(got, "")
			if outs[i].replies != full {
				outs[i].closed = r.closed()
			}
		}()
	}
	wg.Wait()
	queued, refused := 0, 0
	for i, o := range outs {
		switch o.replies {
		case full:
			queued++
		case "+OK\r\n" + refusal, "+OK\r\n+QUEUED\r\n" + refusal:
			if !o.closed {
				t.Fatalf("connection %d: refused by the budget but still open", i)
			}
			refused++
		default:
			t.Fatalf("connection %d: replies %q, want %q, or the budget's error and a close", i, clipString(o.replies), full)
		}
	}
	// The holders fill the budget: an ordinary client of the same node
	// still writes and reads (its own allowance).
	ctx := ctxT(t, 30*time.Second)
	normal := client(t, addr)
	if err := normal.Set(ctx, "ordinary", "during the storm", 0).Err(); err != nil {
		t.Fatalf("an ordinary SET while the holders hold the budget: %v", err)
	}
	if got, err := normal.Get(ctx, "ordinary").Result(); err != nil || got != "during the storm" {
		t.Fatalf("an ordinary GET while the holders hold the budget = %q, %v", got, err)
	}
	held := heapBytes()
	peak := stop()
	t.Logf("%d MULTI holders: %d queued both, %d refused; heap %d MiB before, %d MiB held, peak %d MiB",
		conns, queued, refused, before>>20, held>>20, peak>>20)
	if refused == 0 {
		t.Fatalf("no connection was refused: %d hold 2 × 4 MiB each", queued)
	}
	if grew := held - before; grew > heapBound(conns) {
		t.Fatalf("the heap holds %d MiB more for %d MULTI holders, bound %d MiB", grew>>20, conns, heapBound(conns)>>20)
	}
	if grew := peak - before; grew > heapBound(conns)+256<<20 {
		t.Fatalf("the heap peaked %d MiB over its start for %d MULTI holders", grew>>20, conns)
	}
	for _, nc := range ncs {
		nc.Close()
	}
	t.Logf("RSS %d MiB before, %d MiB after", rss0>>20, readMem(t).rss>>20)
	clusterStillServes(t, tc, "multi-holders")
}

// TestB4NeverReadingTrackers: 400 RESP3 CLIENT TRACKING BCAST connections
// across the three nodes never read while a client changes keys, 1000 of
// 200 bytes at a time: each is closed once a write to it has stalled for
// WriteTimeout (after its socket's buffers filled), and the invalidations
// that wait for them meanwhile stay within the budget (before it, up to
// 10,000 keys queued and as many being written per connection).
func TestB4NeverReadingTrackers(t *testing.T) {
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(10 * time.Second)
	const conns = 400
	before, rss0 := heapBytes(), readMem(t).rss
	stop := heapPeak()
	for i := 0; i < conns; i++ {
		nc, err := net.DialTimeout("tcp", tc.addrs[i%3], 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, err := io.WriteString(nc, "HELLO 3\r\nCLIENT TRACKING ON BCAST\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	tracking := func() int64 {
		n := int64(0)
		for _, s := range tc.srv {
			n += s.track.active.Load()
		}
		return n
	}
	testsupport.WaitFor(t, "every tracker to be tracking", 30*time.Second, func() bool { return tracking() == conns })
	w := client(t, tc.addrs[leader])
	ctx := ctxT(t, 300*time.Second)
	val := "v"
	deadline := time.Now().Add(240 * time.Second)
	rounds := 0
	for ; tracking() > 0; rounds++ {
		if rounds == 1000 || time.Now().After(deadline) {
			t.Fatalf("after %d rounds of 1000 changed keys, %d trackers are still open", rounds, tracking())
		}
		var kv []any
		for i := 0; i < 1000; i++ {
			kv = append(kv, fmt.Sprintf("bcast:%d:%d:%s", rounds, i, strings.Repeat("k", 200)), val)
		}
		// On two shared cores the apply of 1000 changes for 400 trackers
		// can outlast the write's wait, or an election come: the next
		// round goes on (either way keys change).
		if err := w.MSet(ctx, kv...).Err(); err != nil && !strings.HasPrefix(err.Error(), "CLUSTERDOWN") && !strings.HasPrefix(err.Error(), "ERR timeout") {
			t.Fatalf("MSET round %d: %v", rounds, err)
		}
	}
	peak := stop()
	after := heapBytes()
	t.Logf("%d never-reading trackers closed after %d rounds of 1000 changes; heap %d MiB before, peak %d MiB, %d MiB after",
		conns, rounds, before>>20, peak>>20, after>>20)
	// Three nodes' budgets, each connection's allowances and buffers, and
	// room for the collector's lag.
	bound := 3*int64(DefaultConfig().MaxClientBuffer) + conns*(connAllowance+pushAllowance+32<<10) + 128<<20
	if grew := peak - before; grew > bound {
		t.Fatalf("the heap peaked %d MiB over its start for %d never-reading trackers, bound %d MiB", grew>>20, conns, bound>>20)
	}
	t.Logf("RSS %d MiB before, %d MiB after", rss0>>20, readMem(t).rss>>20)
	clusterStillServes(t, tc, "trackers")
}

// TestClientBufferHostile: each limit of the client buffer, with a small
// budget, against huge, many, slow and never-reading clients; the exact
// reply; an ordinary client on the same node keeps working throughout;
// and every byte is given back once they are gone.
func TestClientBufferHostile(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) {
		c.MaxBulk, c.MaxRequest, c.MaxClientBuffer = 512<<10, 1<<20, 2<<20
		// Short enough for the slow and never-reading cases, long enough
		// for the rest on a loaded machine.
		c.ReadTimeout, c.WriteTimeout = 3*time.Second, 3*time.Second
	})
	refusal := "-" + msgBudget + "\r\n"
	big := strings.Repeat("b", 500<<10)
	bulk := func(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }
	normal := dialRaw(t, srv.Addr())
	ordinary := func(step string) {
		t.Helper()
		normal.nc.SetDeadline(time.Now().Add(20 * time.Second))
		normal.send("SET ordinary " + step + "\r\nGET ordinary\r\n")
		normal.expect("an ordinary client during "+step, []string{"+OK\r\n", bulk(step)})
	}
	drained := func(what string) {
		t.Helper()
		testsupport.WaitFor(t, "the budget given back after "+what, 20*time.Second, func() bool {
			return srv.budget.used.Load() == 0 && srv.clients() == 1
		})
	}
	seed := dialRaw(t, srv.Addr())
	seed.send("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n" + bulk(big))
	seed.expect("SET big", []string{"+OK\r\n"})
	seed.nc.Close()
	drained("the seed")

	t.Run("huge: one request over the cap", func(t *testing.T) {
		c := dialRaw(t, srv.Addr())
		c.send("*4\r\n$4\r\nMGET\r\n" + bulk(big) + bulk(big) + "$524288\r\n")
		c.expect("MGET of 1.5 MiB", []string{"-ERR Protocol error: too big request: its arguments are over 1048576 bytes\r\n"})
		if !c.closed() {
			t.Fatal("still open after a request over the cap")
		}
		ordinary("huge")
		drained("huge")
	})

	t.Run("many: transactions past the budget", func(t *testing.T) {
		var cs []*rawConn
		for i := 0; i < 6; i++ { // 6 × 500 KiB queued against 2 MiB
			c := dialRaw(t, srv.Addr())
			c.send("MULTI\r\n*2\r\n$4\r\nECHO\r\n" + bulk(big))
			cs = append(cs, c)
		}
		var holders []*rawConn
		queued, refused := 0, 0
		for i, c := range cs {
			switch got := strings.Join(c.replies(2), ""); got {
			case "+OK\r\n+QUEUED\r\n":
				queued++
				holders = append(holders, c)
			case "+OK\r\n" + refusal:
				if !c.closed() {
					t.Fatalf("connection %d: refused but open", i)
				}
				refused++
			default:
				t.Fatalf("connection %d: %q", i, clipString(got))
			}
			ordinary(fmt.Sprint("many-", i))
		}
		// 2 MiB and each connection's 64 KiB hold four; the rest refused.
		if queued != 4 || refused != 2 {
			t.Fatalf("%d queued, %d refused; want 4, 2", queued, refused)
		}
		for _, c := range holders {
			c.send("EXEC\r\n")
		}
		for i, c := range holders {
			if got := c.replies(1)[0]; got != "*1\r\n"+bulk(big) {
				t.Fatalf("EXEC %d: %q", i, clipString(got))
			}
		}
		for _, c := range cs {
			c.nc.Close()
		}
		drained("many")
	})

	t.Run("many: a pipeline of big replies, read, is never refused", func(t *testing.T) {
		// 40 × 500 KiB is ten budgets: each value is held only until
		// its reply is written.
		c := dialRaw(t, srv.Addr())
		c.send(strings.Repeat("GET big\r\n", 40))
		c.expect("40 × GET big", repeat(bulk(big), 40))
		c.nc.Close()
		drained("a pipeline of big replies")
	})

	t.Run("slow: a request half sent holds what came", func(t *testing.T) {
		slow := dialRaw(t, srv.Addr())
		slow.send("*3\r\n$3\r\nSET\r\n$4\r\nslow\r\n$524288\r\n" + big[:400<<10])
		testsupport.WaitFor(t, "the slow request's bytes charged", 10*time.Second, func() bool {
			return srv.budget.used.Load() >= 300<<10
		})
		ordinary("slow")
		// It never finishes: ReadTimeout closes it, and gives its bytes back.
		if !slow.closed() {
			t.Fatal("the slow request's connection is still open")
		}
		drained("slow")
	})

	t.Run("never-reading: replies of one value named many times", func(t *testing.T) {
		c := dialRaw(t, srv.Addr())
		c.send("*9\r\n$4\r\nMGET\r\n" + strings.Repeat("$3\r\nbig\r\n", 8))
		// 8 × 500 KiB read for one reply, past 2 MiB: refused before the
		// reply is made, and closed.
		c.expect("MGET big × 8", []string{refusal})
		if !c.closed() {
			t.Fatal("still open after the budget's refusal")
		}
		ordinary("mget")
		drained("mget")
		// A client that asks for big replies and never reads them is
		// closed by WriteTimeout once its socket is full.
		nr := dialRaw(t, srv.Addr())
		nr.send(strings.Repeat("GET big\r\n", 200))
		testsupport.WaitFor(t, "the never-reading client served", 10*time.Second, func() bool { return srv.clients() == 2 })
		testsupport.WaitFor(t, "the never-reading client closed", 30*time.Second, func() bool { return srv.clients() == 1 })
		ordinary("never-reading")
		drained("never-reading")
	})
}
