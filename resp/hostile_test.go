package resp

import (
	"bufio"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// rawConn is a client on raw TCP, for what no client library sends.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (c *rawConn) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.nc, s); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// replies reads n reply frames, each as its raw text.
func (c *rawConn) replies(n int) []string {
	c.t.Helper()
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		if err := readFrame(c.br, &b); err != nil {
			c.t.Fatalf("reply %d of %d: %v (got %q)", i+1, n, err, out[:i])
		}
		out[i] = b.String()
	}
	return out
}

// ask sends one request on a connection of its own and returns the reply.
func ask(t *testing.T, addr, request string) string {
	t.Helper()
	c := dialRaw(t, addr)
	c.send(request)
	return c.replies(1)[0]
}

// expect reads len(want) replies and fails the test unless they are want.
func (c *rawConn) expect(after string, want []string) {
	c.t.Helper()
	if got := c.replies(len(want)); strings.Join(got, "") != strings.Join(want, "") {
		c.t.Fatalf("after %q: replies = %q, want %q", after, got, want)
	}
}

// closed reports whether the server closed the connection (EOF, or a
// reset, before any further byte); not when the read only timed out.
func (c *rawConn) closed() bool {
	_, err := c.br.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// readFrame copies one RESP frame (simple types, bulk, aggregates).
func readFrame(br *bufio.Reader, b *strings.Builder) error {
	line, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	b.WriteString(line)
	n := 0
	for _, ch := range strings.TrimRight(line[1:], "\r\n") {
		if ch < '0' || ch > '9' {
			n = -1
			break
		}
		n = n*10 + int(ch-'0')
	}
	switch line[0] {
	case '$', '=':
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		b.Write(buf)
	case '*', '%', '~', '>':
		if line[0] == '%' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readFrame(br, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestHostileInput: malformed and oversized frames on raw TCP get Redis's
// protocol errors and a closed connection (or, where Redis ignores them,
// nothing); the node keeps serving others throughout.
func TestHostileInput(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.MaxBulk = 1 << 20 })
	huge := strings.Repeat("x", 1<<20)
	tests := []struct {
		name    string
		send    string
		replies []string // exact replies, in order
		closes  bool     // the server closes the connection after them
	}{
		{"truncated frame then close", "*2\r\n$3\r\nGET\r\n$5\r\nab", nil, false},
		{"negative multibulk is ignored", "*-5\r\nPING\r\n", []string{"+PONG\r\n"}, false},
		{"empty lines are ignored", "\r\n\n   \r\nPING\r\n", []string{"+PONG\r\n"}, false},
		{"huge multibulk count", "*99999999999\r\n", []string{"-ERR Protocol error: invalid multibulk length\r\n"}, true},
		{"non-numeric multibulk count", "*abc\r\n", []string{"-ERR Protocol error: invalid multibulk length\r\n"}, true},
		{"multibulk count line too long", "*" + strings.Repeat("9", 100) + "\r\n", []string{"-ERR Protocol error: too big mbulk count string\r\n"}, true},
		{"negative bulk length", "*1\r\n$-3\r\n", []string{"-ERR Protocol error: invalid bulk length\r\n"}, true},
		{"huge bulk length", "*1\r\n$999999999999\r\n", []string{"-ERR Protocol error: invalid bulk length\r\n"}, true},
		{"bulk over the limit", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n", []string{"-ERR Protocol error: invalid bulk length\r\n"}, true},
		{"bulk length line too long", "*1\r\n$" + strings.Repeat("1", 100) + "\r\n", []string{"-ERR Protocol error: too big bulk count string\r\n"}, true},
		{"not a bulk in a multibulk", "*1\r\n:5\r\n", []string{"-ERR Protocol error: expected '$', got ':'\r\n"}, true},
		{"bulk without its CRLF", "*1\r\n$4\r\nPINGxx", []string{"-ERR Protocol error: bulk string not followed by CRLF\r\n"}, true},
		{"garbage after pipelined commands", "PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n%x\r\nPING\r\n",
			[]string{"+PONG\r\n", "+PONG\r\n", "-ERR Protocol error: expected '$', got '%'\r\n"}, true},
		{"inline with quotes", "SET \"a b\" 'c \\'d\\''\r\nGET \"a b\"\r\nGET \"\\x41\\n\"\r\n",
			[]string{"+OK\r\n", "$5\r\nc 'd'\r\n", "$-1\r\n"}, false},
		{"inline unbalanced quotes", "SET \"a b\r\n", []string{"-ERR Protocol error: unbalanced quotes in request\r\n"}, true},
		{"inline quote glued to a word", "SET \"a\"b c\r\n", []string{"-ERR Protocol error: unbalanced quotes in request\r\n"}, true},
		{"1 MB inline line", huge + "\r\n", []string{"-ERR Protocol error: too big inline request\r\n"}, true},
		{"1 MB inline line without an end", huge, []string{"-ERR Protocol error: too big inline request\r\n"}, true},
		{"NUL bytes in a key", "*3\r\n$3\r\nSET\r\n$3\r\nk\x00k\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$3\r\nk\x00k\r\n",
			[]string{"+OK\r\n", "$1\r\nv\r\n"}, false},
		{"key over the store's limit", "SET " + strings.Repeat("k", 2000) + " v\r\nPING\r\n",
			[]string{"-ERR malformed command: kv_set: key of 2000 bytes, over 1024\r\n", "+PONG\r\n"}, false},
		{"empty key (Redis has one)", "*3\r\n$3\r\nSET\r\n$0\r\n\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$0\r\n\r\n*2\r\n$3\r\nDEL\r\n$0\r\n\r\n", []string{"+OK\r\n", "$1\r\nv\r\n", ":1\r\n"}, false},
		{"unknown command", "FLY me to\r\n", []string{"-ERR unknown command 'FLY', with args beginning with: 'me' 'to' \r\n"}, false},
		{"wrong arity", "GET\r\nGET a b\r\n", []string{"-ERR wrong number of arguments for 'get' command\r\n",
			"-ERR wrong number of arguments for 'get' command\r\n"}, false},
		{"HELLO 4", "HELLO 4\r\nHELLO x\r\n", []string{"-NOPROTO unsupported protocol version\r\n",
			"-ERR Protocol version is not an integer or out of range\r\n"}, false},
		{"bad integers", "INCRBY n 1.5\r\nINCRBY n +1\r\nEXPIRE n x\r\nSET n v PX 99999999999999999999\r\n", []string{
			"-ERR value is not an integer or out of range\r\n", "-ERR value is not an integer or out of range\r\n",
			"-ERR value is not an integer or out of range\r\n", "-ERR value is not an integer or out of range\r\n"}, false},
		{"CR and LF in an error stay in one line", "*2\r\n$4\r\nSETX\r\n$4\r\na\r\nb\r\n",
			[]string{"-ERR unknown command 'SETX', with args beginning with: 'a  b' \r\n"}, false},
		{"QUIT closes after its reply", "PING\r\nQUIT\r\nPING\r\n", []string{"+PONG\r\n", "+OK\r\n"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, srv.Addr())
			c.send(tt.send)
			if tt.replies == nil && !tt.closes {
				c.nc.(*net.TCPConn).CloseWrite()
				if !c.closed() {
					t.Fatal("the server answered a truncated frame")
				}
			} else {
				c.expect(tt.send, tt.replies)
			}
			if tt.closes && !c.closed() {
				t.Fatal("the connection stayed open after a protocol error")
			}
			// The node keeps serving.
			if r := ask(t, srv.Addr(), "PING\r\n"); r != "+PONG\r\n" {
				t.Fatalf("another client's PING = %q", r)
			}
		})
	}
}

// TestLyingLengthsBoundMemory: 200 connections each announce a bulk of the
// largest size and send a few bytes of it; the server holds a small chunk
// for each, not what they announced (which would be 800 MB).
func TestLyingLengthsBoundMemory(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", nil)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	conns := make([]*rawConn, 200)
	for i := range conns {
		conns[i] = dialRaw(t, srv.Addr())
		conns[i].send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4194304\r\nabc")
	}
	// Every connection is being read: a PING on a new one is answered
	// after them (the accept loop is in order).
	probe := dialRaw(t, srv.Addr())
	probe.send("PING\r\n")
	probe.replies(1)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 100<<20 {
		t.Fatalf("heap grew by %d MB for 200 lying connections", grew>>20)
	}
}

// TestConnectionLimits: the per-address limit refuses the connection past
// it as Redis refuses one past maxclients; an idle connection is closed.
func TestConnectionLimits(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.MaxConnsPerIP, c.IdleTimeout = 3, 300*time.Millisecond })
	var held []*rawConn
	for i := 0; i < 3; i++ {
		c := dialRaw(t, srv.Addr())
		c.send("PING\r\n")
		c.replies(1)
		held = append(held, c)
	}
	extra := dialRaw(t, srv.Addr())
	if r := extra.replies(1); r[0] != "-ERR max number of clients reached\r\n" || !extra.closed() {
		t.Fatalf("the fourth connection got %q", r)
	}
	// Idle: each held connection is closed by the server.
	for _, c := range held {
		if !c.closed() {
			t.Fatal("an idle connection was not closed")
		}
	}
	again := dialRaw(t, srv.Addr())
	again.send("PING\r\n")
	if r := again.replies(1); r[0] != "+PONG\r\n" {
		t.Fatalf("after the idle ones closed: %q", r)
	}
}
