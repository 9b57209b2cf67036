package httpx

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestRefusedBodyAnswerSurvives: a client that sends its whole body before
// it reads (as most do) gets the refusal's answer, not a reset, whether the
// body was refused from its Content-Length, while chunked, or for a spent
// budget; a client that stops sending or never stops is closed after the
// linger all the same, and the handler never runs on a refused body.
func TestRefusedBodyAnswerSurvives(t *testing.T) {
	const limit = 64 << 10
	var handled atomic.Int64
	budget := NewBodyBudget(1<<20, limit)
	l := NewListener("test listener", "127.0.0.1:0", func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == "/spent" {
			if !budget.take(1 << 20) { // the whole budget, as 16 bodies in flight would
				t.Error("the budget was already spent")
			}
			defer budget.give(1 << 20)
		}
		release, ok := ReadBody(ctx, limit, budget)
		if !ok {
			return
		}
		defer release()
		handled.Add(1)
		ctx.SetBodyString("read")
	}, Limits{MaxRequestBody: 16 << 20}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := l.Listen(); err != nil {
		t.Fatal(err)
	}
	go l.Serve()
	defer l.Shutdown(context.Background())

	// send writes the request's head and then body, all of it (errors
	// included: a reset shows in the read), and reads the answer.
	send := func(path, head string, body io.Reader) (*fasthttp.Response, error) {
		t.Helper()
		c, err := net.DialTimeout("tcp", l.Addr(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		wrote := make(chan error, 1)
		go func() {
			_, err := io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: x\r\n"+head+"\r\n")
			if err == nil {
				_, err = io.Copy(c, body)
			}
			wrote <- err
		}()
		if err := <-wrote; err != nil {
			return nil, fmt.Errorf("writing the body: %w", err)
		}
		var resp fasthttp.Response
		if err := resp.Read(bufio.NewReader(c)); err != nil {
			return nil, fmt.Errorf("reading the answer: %w", err)
		}
		// Then end of stream: the connection is not kept.
		if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("after the answer: %d bytes, %v, want end of stream", n, err)
		}
		return &resp, nil
	}
	big := func(n int) io.Reader { return strings.NewReader(strings.Repeat("x", n)) }
	chunked := func(n int) io.Reader {
		var b strings.Builder
		for ; n > 0; n -= 32 << 10 {
			fmt.Fprintf(&b, "%x\r\n%s\r\n", 32<<10, strings.Repeat("y", 32<<10))
		}
		b.WriteString("0\r\n\r\n")
		return strings.NewReader(b.String())
	}
	for _, tt := range []struct {
		name, path, head string
		body             io.Reader
		status           int
		ptype            string
	}{
		{"declared over the limit, 8 MiB sent", "/", "Content-Length: 8388608\r\n", big(8 << 20), 413, "body-too-large"},
		{"declared over the limit by one byte", "/", fmt.Sprintf("Content-Length: %d\r\n", limit+1), big(limit + 1), 413, "body-too-large"},
		{"chunked, 8 MiB", "/", "Transfer-Encoding: chunked\r\n", chunked(8 << 20), 413, "body-too-large"},
		{"budget spent, 60 KiB sent", "/spent", "Content-Length: 61440\r\n", big(60 << 10), 503, "unavailable"},
	} {
		resp, err := send(tt.path, tt.head, tt.body)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		var p Problem
		if resp.StatusCode() != tt.status || json.Unmarshal(resp.Body(), &p) != nil || p.Type != ProblemBase+tt.ptype ||
			!resp.ConnectionClose() || string(resp.Header.Server()) != "idemgate" {
			t.Errorf("%s: %d %q (Connection: close %v, Server %q), want %d %s", tt.name, resp.StatusCode(), resp.Body(),
				resp.ConnectionClose(), resp.Header.Server(), tt.status, tt.ptype)
		}
	}
	if n := handled.Load(); n != 0 {
		t.Fatalf("the handler ran on %d refused bodies", n)
	}
	// Within the limit, the body is read and the connection kept.
	if resp, err := sendKept(l.Addr(), "small body"); err != nil || resp.StatusCode() != 200 || string(resp.Body()) != "read" {
		t.Fatalf("a body within the limit: %v, %v", resp, err)
	}

	// A client that declares a big body, sends what the server reads
	// before the handler runs (8 KiB) and then neither sends more nor
	// closes, and one that never stops sending: each is closed after the
	// linger, its answer read first. The bound is generous (the linger is
	// two seconds): it says the connection ends, not how fast.
	for _, tt := range []struct {
		name string
		// trail writes after the head until a write fails: the
		// server closed the connection.
		trail func(c net.Conn)
	}{
		{"silent", func(c net.Conn) {
			for {
				time.Sleep(50 * time.Millisecond)
				if _, err := c.Write([]byte("s")); err != nil {
					return
				}
			}
		}},
		{"endless", func(c net.Conn) {
			chunk := []byte(strings.Repeat("z", 64<<10))
			for {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}},
	} {
		c, err := net.DialTimeout("tcp", l.Addr(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(60 * time.Second))
		if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1099511627776\r\n\r\n"+strings.Repeat("s", 8<<10)); err != nil {
			t.Fatal(err)
		}
		closed := make(chan struct{})
		go func() { tt.trail(c); close(closed) }()
		var resp fasthttp.Response
		br := bufio.NewReader(c)
		if err := resp.Read(br); err != nil || resp.StatusCode() != 413 {
			t.Errorf("%s: %v, %v", tt.name, resp.StatusCode(), err)
		}
		if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
			t.Errorf("%s: after the answer: %v, want end of stream", tt.name, err)
		}
		select {
		case <-closed:
		case <-time.After(30 * time.Second):
			t.Errorf("%s: the connection was still open 30s after its answer", tt.name)
		}
		c.Close()
	}
}

// sendKept sends a small POST on a connection of its own and reads the
// answer, leaving the connection open.
func sendKept(addr, body string) (*fasthttp.Response, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
		return nil, err
	}
	var resp fasthttp.Response
	return &resp, resp.Read(bufio.NewReader(c))
}
