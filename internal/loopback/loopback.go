// Package loopback picks free loopback addresses for the clusters idemgate
// starts inside one process (the demo, the bench, the tests).
package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowestPort is the lowest port FreeAddrs picks below the system's
// ephemeral range.
const lowestPort = 20000

// FreeAddrs returns n distinct 127.0.0.1 addresses whose ports were free a
// moment ago. It holds every port until all are chosen: a port released a
// moment ago is often handed out again.
//
// The ports are below the system's ephemeral range where it can be read
// (Linux: 32768 and up by default): a node stopped and started again
// binds its port anew, and a port of that range may meanwhile be the
// source port of any outgoing connection on the machine (another test's
// client), held for as long as that connection lives. Ports below the
// range are only ever taken by a listener that asks for one.
func FreeAddrs(n int) ([]string, error) {
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	below := ephemeralLow()
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		ln, err := listenBelow(below)
		if err != nil {
			return nil, err
		}
		held = append(held, ln)
		out = append(out, ln.Addr().String())
	}
	return out, nil
}

// listenBelow listens on a free loopback port from lowestPort up to
// below, or on any free port when there is none (or below is 0).
func listenBelow(below int) (net.Listener, error) {
	for try := 0; below > lowestPort && try < 100; try++ {
		p := lowestPort + rand.IntN(below-lowestPort)
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			return ln, nil
		}
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// ephemeralLow is the first port of the system's ephemeral range, 0 when
// it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return low
}
