//go:build !linux

package resp

import "net"

// unackedBytes is unknown here: only a write's own timeout closes a
// client that does not read.
func unackedBytes(net.Conn) (int, bool) { return 0, false }
