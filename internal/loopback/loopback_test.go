package loopback

import (
	"net"
	"strconv"
	"testing"
)

func TestFreeAddrs(t *testing.T) {
	addrs, err := FreeAddrs(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			t.Fatalf("%s handed out twice", a)
		}
		seen[a] = true
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("%s is not free once returned: %v", a, err)
		}
		ln.Close()
	}
}

// TestFreeAddrsBelowEphemeral: the ports are below the system's
// ephemeral range, which outgoing connections take their source ports
// from.
func TestFreeAddrsBelowEphemeral(t *testing.T) {
	low := ephemeralLow()
	if low <= lowestPort {
		t.Skipf("no ephemeral range above %d to stay below (read %d)", lowestPort, low)
	}
	addrs, err := FreeAddrs(20)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		_, port, _ := net.SplitHostPort(a)
		if p, _ := strconv.Atoi(port); p < lowestPort || p >= low {
			t.Fatalf("%s: port outside [%d, %d)", a, lowestPort, low)
		}
	}
}
