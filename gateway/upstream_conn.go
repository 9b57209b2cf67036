package gateway

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// errStaleConn: a pooled upstream connection was found closed by the
// upstream before anything was written on it. Nothing was sent, so the
// request may go again on a fresh connection.
var errStaleConn = errors.New("pooled upstream connection was closed by the upstream; nothing was sent")

// checkedConn is an upstream connection that checks, before the first write
// of each request on a reused connection, that the upstream has not closed
// it. Without this, a request written to a connection the upstream closed
// while it sat in the pool (an upstream restart, an idle timeout) fails
// after the write with "connection closed", which cannot be told apart from
// "the upstream took the request and died": the key would be marked
// outcome-unknown instead of released.
type checkedConn struct {
	net.Conn
	tls     bool
	mu      sync.Mutex
	reused  bool // a response was read: the next write starts a new request
	checked bool // the current request's liveness check is done
}

func (c *checkedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.reused, c.checked = true, false
		c.mu.Unlock()
	}
	return n, err
}

func (c *checkedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	check := c.reused && !c.checked
	c.checked = true
	c.mu.Unlock()
	if check && !peerAlive(c.Conn, c.tls) {
		c.Conn.Close()
		return 0, errStaleConn
	}
	return c.Conn.Write(p)
}

// dialUpstream dials with a timeout and wraps the connection.
func dialUpstream(timeout time.Duration, tls bool) fasthttp.DialFunc {
	return func(addr string) (net.Conn, error) {
		c, err := fasthttp.DialTimeout(addr, timeout)
		if err != nil {
			return nil, err
		}
		return &checkedConn{Conn: c, tls: tls}, nil
	}
}
