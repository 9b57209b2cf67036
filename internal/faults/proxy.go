package faults

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Mode is what a proxy does with traffic.
type Mode int32

// The modes.
const (
	Pass      Mode = iota // forward both ways
	Blackhole             // accept, forward nothing (the peer sees silence, not an error)
	Reset                 // close every connection at once
)

// Proxy forwards connections from its loopback address to a target.
type Proxy struct {
	ln     net.Listener
	target string
	mode   atomic.Int32
	delay  atomic.Int64 // nanoseconds added to every forwarded chunk
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed atomic.Bool
	wg     sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address, to dial instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetMode switches the proxy. Leaving Blackhole or entering Reset closes
// the connections it holds, so both ends reconnect on fresh ones.
func (p *Proxy) SetMode(m Mode) {
	old := Mode(p.mode.Swap(int32(m)))
	if m == Reset || (old == Blackhole && m != Blackhole) {
		p.dropAll()
	}
}

// SetDelay adds d to every chunk forwarded, in both directions.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Close stops the proxy and its connections.
func (p *Proxy) Close() {
	p.closed.Store(true)
	p.ln.Close()
	p.dropAll()
	p.wg.Wait()
}

func (p *Proxy) dropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

func (p *Proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if Mode(p.mode.Load()) == Reset {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	p.track(client, true)
	defer p.track(client, false)
	defer client.Close()
	server, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		return
	}
	p.track(server, true)
	defer p.track(server, false)
	defer server.Close()
	done := make(chan struct{}, 2)
	go func() { p.pipe(server, client); done <- struct{}{} }()
	go func() { p.pipe(client, server); done <- struct{}{} }()
	<-done
}

// pipe copies src to dst, honouring the mode and delay chunk by chunk.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := p.delay.Load(); d > 0 {
				time.Sleep(time.Duration(d))
			}
			switch Mode(p.mode.Load()) {
			case Blackhole:
				// swallowed: the sender sees a connection that went quiet
			case Reset:
				return
			default:
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			if tc, ok := dst.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			return
		}
	}
}
