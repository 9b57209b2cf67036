//go:build !unix

package gateway

import "net"

// peerAlive cannot peek here; a stale connection is then reported as a
// connection closed after sending (504), as fasthttp does by itself.
func peerAlive(net.Conn, bool) bool { return true }
