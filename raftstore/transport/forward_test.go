package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// echo answers every request with its payload, after release is closed
// (nil: at once).
type echo struct{ release chan struct{} }

func (e echo) Handle(kind Kind, payload []byte) Pending {
	return Answer(func() ([]byte, error) {
		if e.release != nil {
			<-e.release
		}
		return append([]byte{byte(kind)}, payload...), nil
	})
}

// serveForwarding runs srv behind a plain listener that reads the preamble
// as the mux does; it returns the address and the server side's
// connections.
func serveForwarding(t *testing.T, srv *Server) (string, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 16)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
			wg.Add(1)
			go func() {
				defer wg.Done()
				var pre [preambleLen]byte
				if _, err := io.ReadFull(c, pre[:]); err != nil || pre[0] != protoForward {
					c.Close()
					return
				}
				srv.Serve(c)
			}()
		}
	}()
	return ln.Addr().String(), conns
}

func dialTest(t *testing.T, addr string) *Client {
	t.Helper()
	c, err := DialForward(Peer{ID: "leader", Addr: addr, Timeout: 5 * time.Second}, 1<<20, &testErrors)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// connection is a forwarding connection to a server of h, and a context
// that bounds the test's calls.
func connection(t *testing.T, h Handler) (*Server, *Client, context.Context) {
	t.Helper()
	srv := &Server{Handler: h, MaxFrame: 1 << 20, Errors: &testErrors, Logger: discard}
	addr, _ := serveForwarding(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return srv, dialTest(t, addr), ctx
}

// echoConnection is a connection to an echo server.
func echoConnection(t *testing.T) (*Server, *Client, context.Context) {
	t.Helper()
	return connection(t, echo{})
}

// TestForwardedAppliesShareFrames: concurrent applies on one connection go
// out in batch frames, and every one is answered under its own request.
func TestForwardedAppliesShareFrames(t *testing.T) {
	srv, c, ctx := echoConnection(t)
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				kind := Apply
				if i%10 == 9 {
					kind = ReadIndex // another kind between applies ends a batch
				}
				p := []byte(fmt.Sprintf("g%d-%d", g, i))
				got, err := c.Call(ctx, kind, p)
				if err != nil || !bytes.Equal(got, append([]byte{byte(kind)}, p...)) {
					wrong.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if wrong.Load() != 0 {
		t.Fatalf("%d of 3,200 calls got another's answer or none", wrong.Load())
	}
	if srv.batches.Load() == 0 {
		t.Fatal("64 concurrent callers on one connection never shared a frame")
	}
	t.Logf("%d batch frames", srv.batches.Load())
}

// TestForwardFrameLimits: a frame header over the limit closes the
// connection at once; a frame that stops halfway is cut off after
// frameTimeout; neither reaches the handler.
func TestForwardFrameLimits(t *testing.T) {
	old := frameTimeout
	t.Cleanup(func() { frameTimeout = old })
	frameTimeout = 300 * time.Millisecond
	var handled atomic.Int64
	srv := &Server{Handler: counting{&handled}, MaxFrame: 1000, Errors: &testErrors, Logger: discard}
	addr, _ := serveForwarding(t, srv)
	header := func(n uint32) []byte {
		b := binary.BigEndian.AppendUint64([]byte{byte(Apply)}, 1)
		return binary.BigEndian.AppendUint32(b, n)
	}
	for _, tc := range []struct {
		name string
		send []byte
	}{
		{"1 GiB header", header(1 << 30)},
		{"one byte over", header(1001)},
		{"stalled halfway", append(header(100), make([]byte, 10)...)},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write(append([]byte{protoForward}, make([]byte, preambleLen-1)...))
		conn.Write(tc.send)
		conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a bound for the test, far over frameTimeout
		n, err := conn.Read(make([]byte, 1))
		var ne net.Error
		if n != 0 || err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%s: read %d, %v; want the connection closed", tc.name, n, err)
		}
		conn.Close()
	}
	if handled.Load() != 0 {
		t.Fatalf("%d requests reached the handler", handled.Load())
	}
}

type counting struct{ n *atomic.Int64 }

func (c counting) Handle(Kind, []byte) Pending {
	c.n.Add(1)
	return Answer(func() ([]byte, error) { return nil, nil })
}

// TestLostConnectionIsRetry: calls in flight when the connection breaks
// fail as a retry (their fate is unknown), the client says it is dead, and
// a call after that fails at once the same way.
func TestLostConnectionIsRetry(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	addr, conns := serveForwarding(t, &Server{Handler: echo{release: release}, MaxFrame: 1 << 20, Errors: &testErrors, Logger: discard})
	c := dialTest(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wait, err := c.Send(ctx, Apply, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	(<-conns).Close() // the leader's side goes away before answering
	if _, err := wait(ctx); !errors.Is(err, errRetry) || err.Error() != "retry: forwarding connection lost" {
		t.Fatalf("a call cut off = %v, want a retry", err)
	}
	if c.Alive() { // the calls fail once the connection is marked dead
		t.Fatal("the client still says it is alive")
	}
	if _, err := c.Call(ctx, Apply, []byte("y")); !errors.Is(err, errRetry) {
		t.Fatalf("a call on a dead connection = %v, want a retry", err)
	}
}

// heldApplies holds every Apply's answer until release is closed and
// answers a LeaderKV at once.
type heldApplies struct{ release chan struct{} }

func (h heldApplies) Handle(kind Kind, payload []byte) Pending {
	return Answer(func() ([]byte, error) {
		if kind == Apply {
			<-h.release
		}
		return append([]byte{byte(kind)}, payload...), nil
	})
}

// TestLeaderReadSkipsTheQueue: a LeaderKV sent behind applies still
// waiting for their commit is answered before them (its answer is ready;
// theirs are not), each answer under its own request; the applies are
// then answered in order. The old server, answering strictly in order,
// held the read until the applies were released: this test would wait
// for that until its context ended.
func TestLeaderReadSkipsTheQueue(t *testing.T) {
	release := make(chan struct{})
	_, c, ctx := connection(t, heldApplies{release})
	var waits []func(context.Context) ([]byte, error)
	for i := 0; i < 3; i++ {
		w, err := c.Send(ctx, Apply, []byte{byte('0' + i)})
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
	}
	got, err := c.Call(ctx, LeaderKV, []byte("key"))
	if err != nil || string(got) != "Kkey" {
		close(release)
		t.Fatalf("a leader read behind held applies = %q, %v; want its own answer, before theirs", got, err)
	}
	close(release)
	for i, w := range waits {
		if got, err := w(ctx); err != nil || string(got) != string([]byte{'A', byte('0' + i)}) {
			t.Fatalf("apply %d = %q, %v", i, got, err)
		}
	}
}

// heldGrants holds every Grants call's answer until release is closed,
// as a leader holds the feed's call until it has grants to tell; every
// other request is answered at once.
type heldGrants struct{ release chan struct{} }

func (h heldGrants) Handle(kind Kind, payload []byte) Pending {
	return Answer(func() ([]byte, error) {
		if kind == Grants {
			<-h.release
		}
		return append([]byte{byte(kind)}, payload...), nil
	})
}

// TestHeldGrantsCallHoldsNoWrite: the grants feed's call rides the
// forwarding connection, and the leader holds it for up to a second; the
// applies sent behind it are answered meanwhile, and the held call gets
// its own answer once released. Answered in order, as before Grants was
// answered at once, the applies would wait for it until the context ended.
func TestHeldGrantsCallHoldsNoWrite(t *testing.T) {
	release := make(chan struct{})
	_, c, ctx := connection(t, heldGrants{release})
	held, err := c.Send(ctx, Grants, []byte("cursor"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if got, err := c.Call(ctx, Apply, []byte{byte('0' + i)}); err != nil || string(got) != string([]byte{'A', byte('0' + i)}) {
			close(release)
			t.Fatalf("apply %d behind a held grants call = %q, %v; want its own answer at once", i, got, err)
		}
	}
	close(release)
	if got, err := held(ctx); err != nil || string(got) != "Gcursor" {
		t.Fatalf("the held grants call = %q, %v", got, err)
	}
}

// heldReads holds every LeaderKV's answer until release is closed,
// counting those handled and waiting at once.
type heldReads struct {
	release          chan struct{}
	waiting, maxWait atomic.Int64
}

func (h *heldReads) Handle(kind Kind, payload []byte) Pending {
	n := h.waiting.Add(1)
	for m := h.maxWait.Load(); n > m && !h.maxWait.CompareAndSwap(m, n); m = h.maxWait.Load() {
	}
	return Answer(func() ([]byte, error) {
		<-h.release
		h.waiting.Add(-1)
		return payload, nil
	})
}

// TestLeaderReadsBounded: a peer that sends more leader reads than the
// queue holds while none can be answered gets no more than that many
// handled at once (each holds a goroutine); the rest wait in its
// connection, and every one is answered once they can be.
func TestLeaderReadsBounded(t *testing.T) {
	h := &heldReads{release: make(chan struct{})}
	_, c, ctx := connection(t, h)
	const sent, bound = 1500, 1024 // bound: the answer queue's size
	var waits []func(context.Context) ([]byte, error)
	for i := 0; i < sent; i++ {
		w, err := c.Send(ctx, LeaderKV, []byte(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
	}
	for h.waiting.Load() < bound && ctx.Err() == nil { // the server reads them all, or stops at the bound
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // room for reads past the bound, if the server took them
	close(h.release)
	for i, w := range waits {
		if got, err := w(ctx); err != nil || string(got) != fmt.Sprint(i) {
			t.Fatalf("read %d = %q, %v", i, got, err)
		}
	}
	if m := h.maxWait.Load(); m > bound {
		t.Fatalf("%d leader reads were handled at once; want at most %d", m, bound)
	}
}

// TestForwardedCallsReleasedTogetherShareAWrite: 64 callers released at
// once on one P (as request handlers runnable together are) reach the
// leader in a few frames, not one each. A Send wakes the writer at once,
// and it runs before the other callers; it yields before it flushes an
// empty queue, so their calls join its batch. Without the yield each
// call goes out in a frame (and a socket write) of its own.
func TestForwardedCallsReleasedTogetherShareAWrite(t *testing.T) {
	srv, c, ctx := echoConnection(t)
	if _, err := c.Call(ctx, Apply, []byte("warm")); err != nil { // the connection's goroutines are running
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	before := srv.frames.Load()
	start := make(chan struct{})
	var wg sync.WaitGroup
	var wrong atomic.Int64
	const callers = 64
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			p := []byte(fmt.Sprintf("g%d", g))
			got, err := c.Call(ctx, Apply, p)
			if err != nil || !bytes.Equal(got, append([]byte{byte(Apply)}, p...)) {
				wrong.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if wrong.Load() != 0 {
		t.Fatalf("%d of %d calls got another's answer or none", wrong.Load(), callers)
	}
	if frames := srv.frames.Load() - before; frames > callers/4 {
		t.Fatalf("%d callers released together went out in %d frames; want at most %d", callers, frames, callers/4)
	} else {
		t.Logf("%d callers, %d frames", callers, frames)
	}
}

// heldAfter answers the applies whose payload is "ready" at once and holds
// the others until release is closed: a batch that committed, and the
// next batch's calls queued behind it, still waiting for their commit.
type heldAfter struct{ release chan struct{} }

func (h heldAfter) Handle(kind Kind, payload []byte) Pending {
	ready := make(chan struct{})
	if string(payload) == "ready" {
		close(ready)
	} else {
		ready = h.release
	}
	return Pending{Ready: ready, Wait: func() ([]byte, error) {
		<-ready
		return append([]byte{byte(kind)}, payload...), nil
	}}
}

// TestReadyAnswersNotHeldBehindPending: answers that are ready reach the
// follower though calls sent after them are still waiting. The writer
// used to flush only when no request at all was queued behind the answer
// it wrote; under load the next batch's calls always were, so a
// committed batch's answers sat in the buffer until the next batch
// committed, a whole commit later.
func TestReadyAnswersNotHeldBehindPending(t *testing.T) {
	release := make(chan struct{})
	releaseHeld := sync.OnceFunc(func() { close(release) })
	defer releaseHeld() // a failed check must not leave the server's writer waiting
	_, c, ctx := connection(t, heldAfter{release})
	var ready []func(context.Context) ([]byte, error)
	for i := 0; i < 3; i++ {
		w, err := c.Send(ctx, Apply, []byte("ready"))
		if err != nil {
			t.Fatal(err)
		}
		ready = append(ready, w)
	}
	held, err := c.Send(ctx, Apply, []byte("held"))
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range ready {
		if got, err := w(ctx); err != nil || string(got) != "Aready" {
			t.Fatalf("ready apply %d with a held one behind it = %q, %v; want its answer while the other is held", i, got, err)
		}
	}
	releaseHeld()
	if got, err := held(ctx); err != nil || string(got) != "Aheld" {
		t.Fatalf("the held apply, released = %q, %v", got, err)
	}
}
