package resp

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// unackedBytes is what the socket under nc holds that its peer has not
// acknowledged (SIOCOUTQ); ok false when nc has no socket to ask. A
// wrapper (the per-address cap's) is looked through.
func unackedBytes(nc net.Conn) (n int, ok bool) {
	for {
		w, wraps := nc.(interface{ NetConn() net.Conn })
		if !wraps {
			break
		}
		nc = w.NetConn()
	}
	sc, isSocket := nc.(syscall.Conn)
	if !isSocket {
		return 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil || ierr != nil {
		return 0, false
	}
	return n, true
}
