package httpx

import (
	"bufio"
	"io"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// A lingering close, for an answer given before the request's body was
// read (a body over the limit, a budget spent, a smuggling attempt).
// Closing a socket that still holds unread request bytes makes the kernel
// send a reset, and a reset can throw away the answer waiting in the
// client's receive buffer before the client read it: a client still
// writing a refused body then sees "connection reset by peer" instead of
// its 413, and cannot tell a refusal from a network failure. So the answer
// is written, the write half shut (the client reads the answer, then end of
// stream), and what the client still sends is read and dropped, for at most
// lingerTime and lingerBytes, before the close: Apache's lingering close,
// and what Go's net/http does after a handler left a body unread.
const (
	lingerTime  = 2 * time.Second
	lingerBytes = 64 << 20
)

// closeAfterAnswer ends the connection once the answer ctx holds is
// written, reading and dropping what the client still sends meanwhile,
// within lingerTime and lingerBytes (the listener's timeouts do not apply
// to a connection the handler took over). Call it in place of
// ctx.SetConnectionClose when the request's body may still be on its way.
func closeAfterAnswer(ctx *fasthttp.RequestCtx) {
	ctx.SetConnectionClose()
	if len(ctx.Response.Header.Server()) == 0 {
		// fasthttp adds its Server line only to answers it writes itself.
		ctx.Response.Header.SetServer(serverName)
	}
	answer := []byte(ctx.Response.String())
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) { linger(c, answer) })
}

// serverName is the Server header of every answer (NewListener's Name).
const serverName = "idemgate"

// linger writes answer to c, shuts c's write half and drops what c still
// brings, until end of stream, an error, lingerTime or lingerBytes. The
// server closes c when it returns. c is what fasthttp hands a hijack: it
// reads through the server's buffer first.
func linger(c net.Conn, answer []byte) {
	deadline := time.Now().Add(lingerTime)
	_ = c.SetDeadline(deadline)
	if _, err := c.Write(answer); err != nil {
		return
	}
	if cw, ok := closeWriter(c); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.CopyN(io.Discard, bufio.NewReaderSize(c, 32<<10), lingerBytes)
}

// closeWriter finds the connection's write-half shutdown, under the
// wrappers a listener puts around it (the connection cap's, fasthttp's
// hijack reader), as a *net.TCPConn or *tls.Conn has it.
func closeWriter(c net.Conn) (interface{ CloseWrite() error }, bool) {
	for i := 0; i < 8 && c != nil; i++ {
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			return cw, true
		}
		switch u := c.(type) {
		case interface{ NetConn() net.Conn }:
			c = u.NetConn()
		case interface{ UnsafeConn() net.Conn }:
			c = u.UnsafeConn()
		default:
			return nil, false
		}
	}
	return nil, false
}
