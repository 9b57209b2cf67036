package checkout_test

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// cutProxy stands between the browser and a gateway. Armed, it lets the
// next POST /pay through and, when the gateway's answer comes back (the
// upstream acted and the record is complete), relays all of it but its
// last byte and closes the connection: the network cut after the fact, that
// the browser sees as a body cut short (a failed read). The bytes it relays
// keep Chromium from retrying the request on its own, as it may on a
// reused connection that closes before any answer; and a status line
// alone it would take for a whole answer.
type cutProxy struct {
	ln       net.Listener
	target   string
	armed    atomic.Bool
	payPosts atomic.Int64 // POST /pay requests seen
	cuts     atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]bool
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *cutProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns[c] = true
	p.mu.Unlock()
}

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *cutProxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer client.Close()
	server, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		return
	}
	defer server.Close()
	p.track(client)
	p.track(server)
	var payPending atomic.Bool // a POST /pay went out on this connection
	done := make(chan struct{}, 2)
	go relay(server, client, done, func(chunk []byte) bool { // browser -> gateway
		if bytes.Contains(chunk, []byte("POST /pay ")) {
			p.payPosts.Add(1)
			payPending.Store(true)
		}
		return true
	})
	go relay(client, server, done, func(chunk []byte) bool { // gateway -> browser
		if payPending.Swap(false) && p.armed.CompareAndSwap(true, false) {
			client.Write(chunk[:len(chunk)-1]) // one answer, one chunk: its body ends a byte short
			p.cuts.Add(1)
			client.Close()
			server.Close()
			return false
		}
		return true
	})
	<-done
}

// relay copies src to dst chunk by chunk while pass lets each through.
func relay(dst, src net.Conn, done chan<- struct{}, pass func([]byte) bool) {
	defer func() { done <- struct{}{} }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !pass(buf[:n]) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
