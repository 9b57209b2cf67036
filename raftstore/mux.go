package raftstore

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The first byte of every connection to the Raft port says who it is for,
// so one port carries both Raft and forwarding (as rqlite's tcp.Mux does).
const (
	protoRaft    byte = 'R'
	protoForward byte = 'F'
)

// mux accepts connections on the Raft port and routes them by first byte.
type mux struct {
	ln        net.Listener
	advertise net.Addr
	raftConns chan net.Conn
	forward   func(net.Conn)
	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

func newMux(ln net.Listener, advertise net.Addr, forward func(net.Conn)) *mux {
	m := &mux{ln: ln, advertise: advertise, raftConns: make(chan net.Conn, 16),
		forward: forward, closed: make(chan struct{})}
	m.wg.Add(1)
	go m.serve()
	return m
}

func (m *mux) serve() {
	defer m.wg.Done()
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.closed:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go m.route(c)
	}
}

func (m *mux) route(c net.Conn) {
	var b [1]byte
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, b[:]); err != nil {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	switch b[0] {
	case protoRaft:
		select {
		case m.raftConns <- c:
		case <-m.closed:
			c.Close()
		}
	case protoForward:
		m.forward(c)
	default:
		c.Close()
	}
}

func (m *mux) close() {
	m.closeOnce.Do(func() {
		close(m.closed)
		m.ln.Close()
	})
	m.wg.Wait()
}

// raftLayer is the raft.StreamLayer over the mux.
type raftLayer struct {
	m *mux
}

var _ raft.StreamLayer = (*raftLayer)(nil)

func (l *raftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.m.raftConns:
		return c, nil
	case <-l.m.closed:
		return nil, net.ErrClosed
	}
}

func (l *raftLayer) Close() error { l.m.close(); return nil }

func (l *raftLayer) Addr() net.Addr { return l.m.advertise }

func (l *raftLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return dialProto(string(addr), timeout, protoRaft)
}

func dialProto(addr string, timeout time.Duration, proto byte) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{proto}); err != nil {
		c.Close()
		return nil, err
	}
	c.SetWriteDeadline(time.Time{})
	return c, nil
}
