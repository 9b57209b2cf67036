package httpx

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// WatchClose calls gone, once, if the client closes or resets the
// connection c while a handler still holds its request (a lock acquire
// waiting in its queue): the kernel's readiness wakes it, nothing polls,
// and the read is a peek, so no byte of a next request is taken from the
// server. It calls gone too when the server closes c itself (shutting
// down). The handler calls the returned stop before it answers. A
// connection that is not a socket underneath is not watched.
func WatchClose(c net.Conn, gone func()) (stop func()) {
	for {
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = u.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return func() {}
	}
	rc, err := sc.SyscallConn()
	if err != nil || c.SetReadDeadline(time.Time{}) != nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		closed := false
		var buf [1]byte
		err := rc.Read(func(fd uintptr) bool {
			n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch {
			case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR):
				return false // nothing yet: wait for readability
			case err != nil || n == 0:
				closed = true // reset, or the client's FIN
			}
			return true // data (a pipelined request): the client is there
		})
		// A connection the server closed itself (shutting down) is gone
		// too: what waits on the client would otherwise wait forever. The
		// stop below ends the read with a deadline instead.
		if closed || errors.Is(err, net.ErrClosed) {
			gone()
		}
	}()
	return func() {
		_ = c.SetReadDeadline(time.Now()) // wakes the read above
		<-done
		_ = c.SetReadDeadline(time.Time{}) // the server sets its own before its next read
	}
}
