package resp

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// TestPubSubHostile: Pub/Sub's limits, each with the exact answer.
func TestPubSubHostile(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.MaxBulk = 1 << 20 })

	t.Run("a channel name as large as a value", func(t *testing.T) {
		huge := strings.Repeat("c", 1<<20)
		sub, pub := dialRaw(t, srv.Addr()), dialRaw(t, srv.Addr())
		sub.send(array("SUBSCRIBE", huge))
		sub.expect("SUBSCRIBE", []string{"*3\r\n$9\r\nsubscribe\r\n$1048576\r\n" + huge + "\r\n:1\r\n"})
		pub.send(array("PUBLISH", huge, "m") + array("PUBSUB", "NUMSUB", huge))
		pub.expect("PUBLISH", []string{":1\r\n", "*2\r\n$1048576\r\n" + huge + "\r\n:1\r\n"})
		sub.expect("message", []string{"*3\r\n$7\r\nmessage\r\n$1048576\r\n" + huge + "\r\n$1\r\nm\r\n"})
		// One byte over the bulk limit: Redis's refusal, and the close.
		over := dialRaw(t, srv.Addr())
		over.send(fmt.Sprintf("*2\r\n$9\r\nSUBSCRIBE\r\n$%d\r\n", 1<<20+1))
		over.expect("over the limit", []string{"-ERR Protocol error: invalid bulk length\r\n"})
	})

	t.Run("10^4 subscriptions on one connection", func(t *testing.T) {
		const n = 10_000
		sub, other := dialRaw(t, srv.Addr()), dialRaw(t, srv.Addr())
		chans := make([]string, n)
		want := make([]string, n)
		for i := range chans {
			chans[i] = fmt.Sprint("ch", i)
			want[i] = fmt.Sprintf("*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:%d\r\n", len(chans[i]), chans[i], i+1)
		}
		sub.send(array(append([]string{"SUBSCRIBE"}, chans...)...))
		sub.expect("SUBSCRIBE ×10^4", want)
		pats := make([]string, n)
		for i := range pats {
			pats[i] = fmt.Sprint("ch", i, "*")
			want[i] = fmt.Sprintf("*3\r\n$10\r\npsubscribe\r\n$%d\r\n%s\r\n:%d\r\n", len(pats[i]), pats[i], n+i+1)
		}
		sub.send(array(append([]string{"PSUBSCRIBE"}, pats...)...))
		sub.expect("PSUBSCRIBE ×10^4", want)
		// ch5000 matches its channel and the patterns ch5*, ch50*, ch500*
		// and ch5000*.
		other.send("PUBLISH ch5000 x\r\nPUBSUB NUMPAT\r\nPUBSUB NUMSUB ch9999\r\n")
		other.expect("PUBLISH", []string{":5\r\n", ":10000\r\n", "*2\r\n$6\r\nch9999\r\n:1\r\n"})
		sub.replies(5)
		sub.send("UNSUBSCRIBE\r\n") // all, in name order here
		got := sub.replies(n)
		for i := range got {
			if !strings.HasPrefix(got[i], "*3\r\n$11\r\nunsubscribe\r\n") || !strings.HasSuffix(got[i], fmt.Sprintf(":%d\r\n", 2*n-i-1)) {
				t.Fatalf("UNSUBSCRIBE reply %d = %q", i, got[i])
			}
		}
		// The connection ends subscribed to 10^4 patterns: the node's
		// table forgets them.
		sub.nc.Close()
		for deadline := time.Now().Add(10 * time.Second); ; {
			other.send("PUBSUB NUMPAT\r\nPUBSUB CHANNELS\r\n")
			if r := other.replies(2); r[0] == ":0\r\n" && r[1] == "*0\r\n" {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("after the subscriber left: %q", r)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// TestPubSubSlowSubscriberClosed: a subscriber that never reads while 10^5
// messages of 4 KiB are published to it is closed once what waits for it
// passes the listener's client buffer; the node's heap never holds the
// 400 MiB published, the budget is given back, and the publisher is
// answered throughout. The heap is the test process's, shared with what
// earlier tests left running: its bound is far under what was published,
// far over the 8 MiB buffer.
func TestPubSubSlowSubscriberClosed(t *testing.T) {
	const budget = 8 << 20
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.MaxClientBuffer = budget })
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	slow, err := d.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "SUBSCRIBE feed\r\n") // and never read
	pub := dialRaw(t, srv.Addr())
	for deadline := time.Now().Add(10 * time.Second); ; {
		pub.send("PUBSUB NUMSUB feed\r\n")
		if pub.replies(1)[0] == "*2\r\n$4\r\nfeed\r\n:1\r\n" {
			break
		} else if time.Now().After(deadline) {
			t.Fatal("the subscriber never subscribed")
		}
		time.Sleep(5 * time.Millisecond)
	}

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	const n = 100_000
	payload := strings.Repeat("p", 4096)
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(120 * time.Second))
	go func() {
		bw := bufio.NewWriter(nc)
		for range n {
			fmt.Fprintf(bw, "*3\r\n$7\r\nPUBLISH\r\n$4\r\nfeed\r\n$4096\r\n%s\r\n", payload)
		}
		bw.Flush()
	}()
	br := bufio.NewReader(nc)
	answered := map[string]int{}
	for i := range n {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the publisher's reply %d: %v", i, err)
		}
		answered[line]++
	}
	close(stop)
	<-sampled
	if answered[":1\r\n"] == 0 || answered[":0\r\n"] == 0 || answered[":1\r\n"]+answered[":0\r\n"] != n {
		t.Fatalf("PUBLISH answers %v: want :1 while the subscriber stood, :0 once it was closed", answered)
	}
	if grew := int64(peak.Load()) - int64(base); grew > 160<<20 {
		t.Errorf("the heap grew by %d MiB while 400 MiB went to a subscriber that does not read, want the client buffer's bound (8 MiB) and change", grew>>20)
	}
	for deadline := time.Now().Add(10 * time.Second); srv.budget.used.Load() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the client buffer holds %d bytes after the subscriber was closed, want 0", srv.budget.used.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	pub.send("PUBSUB NUMSUB feed\r\n")
	pub.expect("NUMSUB after", []string{"*2\r\n$4\r\nfeed\r\n:0\r\n"})
	t.Logf("heap grew by at most %d MiB; publishes answered %v", (int64(peak.Load())-int64(base))>>20, answered)
}
