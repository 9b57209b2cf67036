// Package loopback picks free loopback addresses for the clusters idemgate
// starts inside one process (the demo, the bench, the tests).
package loopback

import "net"

// FreeAddrs returns n distinct 127.0.0.1 addresses whose ports were free a
// moment ago. It holds every port until all are chosen: a port released a
// moment ago is often handed out again.
func FreeAddrs(n int) ([]string, error) {
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		held = append(held, ln)
		out = append(out, ln.Addr().String())
	}
	return out, nil
}
