package loopback

import (
	"net"
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
