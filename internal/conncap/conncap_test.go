package conncap

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

func TestRemoteIP(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5}, "127.0.0.1"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.1.2.3"), Port: 5}, "10.1.2.3"}, // mapped: the IPv4 host
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 5}, "2001:db8::1"},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 5, Zone: "eth0"}, "fe80::1"}, // the zone is the same host
		{&net.TCPAddr{IP: net.ParseIP("2001:DB8:0:0::1"), Port: 5}, "2001:db8::1"},
		{&net.UDPAddr{IP: net.ParseIP("::ffff:10.1.2.3"), Port: 9}, "10.1.2.3"},
		{&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, "/run/x.sock"},
		{&net.UnixAddr{Name: "", Net: "unix"}, ""},
		{fakeAddr("host.example:80"), "host.example"},
		{fakeAddr("not an address"), "not an address"},
		{&net.TCPAddr{}, ""}, // no IP: the empty host
	} {
		if got := RemoteIP(tc.addr); got != tc.want {
			t.Errorf("RemoteIP(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

type fakeAddr string

func (a fakeAddr) Network() string { return "fake" }
func (a fakeAddr) String() string  { return string(a) }

func TestPerIP(t *testing.T) {
	p := NewPerIP(2)
	steps := []struct {
		acquire bool // else release
		ip      string
		want    bool
	}{
		{true, "a", true}, {true, "a", true}, {true, "a", false}, {true, "b", true},
		{false, "a", true}, {true, "a", true}, {true, "a", false},
		{false, "a", true}, {false, "a", true}, {false, "b", true},
	}
	for i, s := range steps {
		if s.acquire {
			if got := p.Acquire(s.ip); got != s.want {
				t.Fatalf("step %d: Acquire(%s) = %v, want %v", i, s.ip, got, s.want)
			}
			continue
		}
		p.Release(s.ip)
	}
	if len(p.n) != 0 {
		t.Fatalf("after every release the count still holds %v", p.n)
	}
	// Concurrent: never more than the limit in at once, nothing left over.
	p = NewPerIP(3)
	var wg sync.WaitGroup
	var mu sync.Mutex
	in, most := 0, 0
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if !p.Acquire("x") {
					continue
				}
				mu.Lock()
				in++
				most = max(most, in)
				mu.Unlock()
				mu.Lock()
				in--
				mu.Unlock()
				p.Release("x")
			}
		}()
	}
	wg.Wait()
	if most > 3 || len(p.n) != 0 {
		t.Fatalf("at most %d in at once (limit 3), %v left", most, p.n)
	}
}

// TestListener: over the limit a connection is refused (told through
// refuse, then closed) while another address still gets in, and a closed
// connection gives its place back, once however often it is closed.
func TestListener(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan string, 16)
	ln := NewListener(raw, 2, func(c net.Conn, ip string) {
		c.Write([]byte("no\n"))
		refused <- ip
	})
	defer ln.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func(from byte) net.Conn {
		t.Helper()
		d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, from)}}
		c, err := d.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	var server []net.Conn
	for i := 0; i < 2; i++ {
		dial(1)
		server = append(server, <-accepted)
	}
	over := dial(1)
	if ip := <-refused; ip != "127.0.0.1" {
		t.Fatalf("refused as %q, want 127.0.0.1", ip)
	}
	over.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(over); string(b) != "no\n" || err != nil {
		t.Fatalf("the refused connection read %q, %v; want the refusal, then EOF", b, err)
	}
	dial(2) // another address has room
	other := <-accepted
	if ip := RemoteIP(other.RemoteAddr()); ip != "127.0.0.2" {
		t.Fatalf("accepted %s, want the other address", ip)
	}
	server[0].Close()
	server[0].Close() // twice: one place back, not two
	dial(1)
	server[0] = <-accepted
	dial(1)
	if ip := <-refused; ip != "127.0.0.1" {
		t.Fatalf("refused as %q after a double close", ip)
	}
	for _, c := range append(server, other) {
		c.Close()
	}
	ln.cap.mu.Lock()
	left := len(ln.cap.n)
	ln.cap.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d addresses still counted with every connection closed", left)
	}
}
