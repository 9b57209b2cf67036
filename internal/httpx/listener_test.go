package httpx

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// flakyListener fails its first accepts with errs, then accepts from ln.
type flakyListener struct {
	net.Listener
	errs []error
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		return nil, err
	}
	return l.Listener.Accept()
}

// TestAcceptSurvivesDescriptorShortage: out of file descriptors, the
// listener waits and accepts again instead of returning (fasthttp would stop
// serving, and the node would exit).
func TestAcceptSurvivesDescriptorShortage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	enfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.ENFILE)}
	rl := &retryListener{Listener: &flakyListener{Listener: ln, errs: []error{emfile, enfile, emfile}},
		name: "test listener", logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer c.Close()
			c.Read(make([]byte, 1))
		}
	}()
	c, err := rl.Accept()
	if err != nil {
		t.Fatalf("Accept = %v, want a connection after the shortage passed", err)
	}
	c.Close()
	// A closed listener still ends Serve.
	ln.Close()
	if _, err := rl.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept on a closed listener = %v", err)
	}
}

// TestConnectionCapPerAddress: past max_conns_per_ip an address's next
// connection is answered with a 429 problem and closed, before any of its
// request is read; another address still gets in, and a closed connection
// frees its place.
func TestConnectionCapPerAddress(t *testing.T) {
	l := NewListener("test listener", "127.0.0.1:0", func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") },
		Limits{MaxConnsPerIP: 2}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := l.Listen(); err != nil {
		t.Fatal(err)
	}
	go l.Serve()
	defer l.Shutdown(context.Background())
	dial := func(from byte) net.Conn {
		t.Helper()
		d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, from)}}
		c, err := d.Dial("tcp", l.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	get := func(c net.Conn) (*fasthttp.Response, error) {
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return nil, err
		}
		var resp fasthttp.Response
		return &resp, resp.Read(bufio.NewReader(c))
	}
	var held []net.Conn
	for i := 0; i < 2; i++ {
		c := dial(1)
		if r, err := get(c); err != nil || r.StatusCode() != 200 {
			t.Fatalf("connection %d: %v, %v", i, r, err)
		}
		held = append(held, c)
	}
	over := dial(1)
	r, err := get(over)
	if err != nil {
		t.Fatalf("the connection over the cap: %v", err)
	}
	var p Problem
	if r.StatusCode() != 429 || string(r.Header.ContentType()) != "application/problem+json" ||
		json.Unmarshal(r.Body(), &p) != nil || p.Type != ProblemBase+"too-many-requests" || p.Status != 429 {
		t.Fatalf("over the cap: %d %s %s", r.StatusCode(), r.Header.ContentType(), r.Body())
	}
	if n, err := over.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("the refused connection stayed open (%d, %v)", n, err)
	}
	if r, err := get(dial(2)); err != nil || r.StatusCode() != 200 {
		t.Fatalf("another address: %v, %v", r, err)
	}
	held[0].Close()
	// The server sees the close a moment later: the next connection of
	// the address gets in once it has.
	var again *fasthttp.Response
	for i := 0; i < 100; i++ {
		if again, err = get(dial(1)); err == nil && again.StatusCode() == 200 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if again == nil || again.StatusCode() != 200 {
		t.Fatalf("after a held connection closed: %v, %v", again, err)
	}
}
