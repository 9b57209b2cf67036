package conncap

import (
	"net"
	"sync"
)

// Listener is a listener whose connections are capped per address: Accept
// returns only connections whose address has room, and a connection gives
// its place back when it is closed. One over the limit is handed to Refuse
// (which may write a last answer; it must not block long: it runs on the
// accept loop) and closed; Accept then waits for the next.
type Listener struct {
	net.Listener
	cap *PerIP
	// Refuse is told each connection refused, and the address it counts
	// under; nil: closed without a word.
	refuse func(c net.Conn, ip string)
}

// NewListener caps ln's connections at max per address (max must be
// positive).
func NewListener(ln net.Listener, max int, refuse func(c net.Conn, ip string)) *Listener {
	return &Listener{Listener: ln, cap: NewPerIP(max), refuse: refuse}
}

// Accept waits for a connection whose address has room.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := RemoteIP(c.RemoteAddr())
		if l.cap.Acquire(ip) {
			return OnClose(c, func() { l.cap.Release(ip) }), nil
		}
		if l.refuse != nil {
			l.refuse(c, ip)
		}
		c.Close()
	}
}

// OnClose is c calling release once, when it is first closed: how a
// connection gives back the place a cap counted it in.
func OnClose(c net.Conn, release func()) net.Conn {
	return &conn{Conn: c, release: release}
}

type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// NetConn returns the connection c wraps (as tls.Conn's does): how a
// handler that waits long reaches the socket to watch for its client going
// away (httpx.WatchClose).
func (c *conn) NetConn() net.Conn { return c.Conn }
