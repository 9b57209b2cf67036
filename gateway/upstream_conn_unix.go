//go:build unix

package gateway

import (
	"errors"
	"net"
	"syscall"
)

// peerAlive peeks at the socket without blocking and without consuming:
// end of stream or an error means the upstream closed the connection; bytes
// waiting on a plain HTTP connection before a request was written are an
// unsolicited answer (a 408 before closing, say), so that connection is not
// used either. On TLS, pending bytes may be a session ticket: alive.
func peerAlive(c net.Conn, tls bool) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	alive := true
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK):
			alive = true // nothing pending: open and quiet
		case rerr != nil:
			alive = false
		case n == 0:
			alive = false // end of stream
		default:
			alive = tls
		}
		return true // never wait for readiness
	})
	return err == nil && alive
}
