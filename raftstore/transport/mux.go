package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/certs"
	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/conncap"
)

// The first byte of every connection to the Raft port says who it is for,
// so one port carries both Raft and forwarding (as rqlite's tcp.Mux does).
// With TLS the byte is the first one inside the TLS stream: the handshake,
// which checks the peer's certificate and membership, comes before it.
//
// After the protocol byte comes the dialling node's cluster id (16 bytes,
// zero while it knows none): a node refuses Raft and forwarding from
// another cluster (Gate.Admit), whatever certificate the dialler holds. So
// every connection opens with
//
//	proto (1) | cluster id (16)
//
// protoPubSub carries published messages to a peer (pubsub.go), admitted
// as Raft and forwarding are.
//
// protoHello asks a node what it is (hello.go): any node the CA vouches for
// may ask, members or not, so a node being bootstrapped or added can learn
// who its peers are before it accepts their Raft traffic.
const (
	protoRaft    byte = 'R'
	protoForward byte = 'F'
	protoHello   byte = 'H'
	protoPubSub  byte = 'P'
	preambleLen       = 1 + len(command.ClusterID{})

	// handshakeTimeout bounds an accepted connection's TLS handshake and
	// first byte together: a peer that says nothing is closed.
	handshakeTimeout = 5 * time.Second
	// maxPendingPerIP bounds the connections of one address still in their
	// handshake, so one host's idle connections cannot take every slot
	// from the members.
	maxPendingPerIP = 16
)

// Gate is what the Mux asks of the node about who connects: membership,
// which the wire knows nothing of.
type Gate interface {
	// MemberHost reports whether ip is the host of a member's address:
	// its connections are not held to Config.MaxConns.
	MemberHost(ip string) bool
	// Admit decides whether a connection for Raft or forwarding from node
	// (the id its certificate names; "" without TLS), dialled by a member
	// of cluster, may go on; a refusal names its reason (the metric
	// label).
	Admit(node string, cluster command.ClusterID) (reason string, err error)
	// Track is told each connection that passed the TLS handshake and the
	// node it proved; the returned func is called when it closes.
	Track(c net.Conn, node string) (untrack func())
	// Reject counts a refused connection under its reason.
	Reject(reason string)
}

// Config is what the Mux needs besides its listener.
type Config struct {
	// Advertise is the address Raft gives its peers for this node.
	Advertise net.Addr
	// TLS is the server side of mutual TLS; nil: plaintext.
	TLS *tls.Config
	// MaxConns bounds the connections open at once, Raft and forwarding
	// together, from hosts that are not members'.
	MaxConns int
	Gate     Gate
	// Forward serves a forwarding connection past its preamble until it
	// ends (Server.Serve), and closes it.
	Forward func(net.Conn)
	// PubSub serves a Pub/Sub connection past its preamble until it ends
	// (ServePubSub), and closes it; nil: such connections are closed.
	PubSub func(net.Conn)
	// Hello is this node's hello, for a hello connection; false: none
	// (the node is closing), the connection is closed unanswered.
	Hello func() (Hello, bool)
	// Cluster is this node's cluster id, sent in the preamble of every
	// Raft connection it dials.
	Cluster func() command.ClusterID
	// DialTLS is the client side of mutual TLS for dialling a Raft peer at
	// addr; nil (or a nil result): plaintext.
	DialTLS func(addr string) *tls.Config
	Logger  *slog.Logger
}

// Mux accepts connections on the Raft port, checks who they are from and
// routes them by first byte. It is hashicorp/raft's StreamLayer: Raft's
// connections, dialled and accepted, go through it.
type Mux struct {
	cfg       Config
	ln        net.Listener
	slots     chan struct{}
	pending   *conncap.PerIP // connections not yet past their handshake
	raftConns chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	logMu  sync.Mutex
	logged map[string]refuseLog // by reason: the last line logged (refuse)
}

var _ raft.StreamLayer = (*Mux)(nil)

// NewMux serves ln until Close.
func NewMux(ln net.Listener, cfg Config) *Mux {
	m := &Mux{cfg: cfg, ln: ln, slots: make(chan struct{}, cfg.MaxConns), pending: conncap.NewPerIP(maxPendingPerIP),
		raftConns: make(chan net.Conn, 16), closed: make(chan struct{}), logged: map[string]refuseLog{}}
	m.wg.Add(1)
	go m.serve()
	return m
}

func (m *Mux) serve() {
	defer m.wg.Done()
	backoff := time.Duration(0)
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
			// Out of file descriptors (EMFILE, ENFILE) or another
			// transient failure: wait and accept again, never exit.
			if backoff == 0 {
				backoff = 5 * time.Millisecond
				m.cfg.Logger.Warn("raft port: accept failed; retrying", "error", err)
			} else if backoff < time.Second {
				backoff *= 2
			}
			select {
			case <-time.After(backoff):
			case <-m.closed:
				return
			}
			continue
		}
		backoff = 0
		ip := conncap.RemoteIP(c.RemoteAddr())
		if !m.pending.Acquire(ip) {
			m.refuse(c.RemoteAddr(), "", "too_many_pending", fmt.Errorf("over %d connections of %s in their handshake", maxPendingPerIP, ip))
			c.Close()
			continue
		}
		// The members' own hosts are not held to the shared cap: an
		// attacker with many addresses could otherwise fill it and keep
		// the members from making new connections. Their per-address
		// cap above still holds.
		if !m.cfg.Gate.MemberHost(ip) {
			select {
			case m.slots <- struct{}{}:
				c = conncap.OnClose(c, func() { <-m.slots })
			default:
				m.pending.Release(ip)
				m.refuse(c.RemoteAddr(), "", "too_many_connections", fmt.Errorf("over %d connections from hosts that are not members", m.cfg.MaxConns))
				c.Close()
				continue
			}
		}
		go m.route(c, ip)
	}
}

func (m *Mux) route(c net.Conn, ip string) {
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	conn := c
	node := ""
	if m.cfg.TLS != nil {
		tc := tls.Server(c, m.cfg.TLS)
		if err := tc.Handshake(); err != nil {
			m.pending.Release(ip)
			m.refuse(c.RemoteAddr(), "", rejectReason(err), err)
			c.Close()
			return
		}
		if pcs := tc.ConnectionState().PeerCertificates; len(pcs) > 0 {
			node, _ = certs.NodeIDOf(pcs[0])
		}
		stc := &slotTLSConn{Conn: tc, slot: c}
		stc.untrack = m.cfg.Gate.Track(stc, node)
		conn = stc
	}
	var pre [preambleLen]byte
	_, err := io.ReadFull(conn, pre[:])
	m.pending.Release(ip)
	if err != nil {
		conn.Close()
		return
	}
	proto, cluster := pre[0], command.ClusterID(pre[1:])
	switch proto {
	case protoRaft, protoForward, protoPubSub:
		if reason, err := m.cfg.Gate.Admit(node, cluster); err != nil {
			m.refuse(c.RemoteAddr(), node, reason, err)
			conn.Close()
			return
		}
	case protoHello:
	default:
		m.refuse(c.RemoteAddr(), node, "bad_protocol", fmt.Errorf("unknown protocol byte %q", proto))
		conn.Close()
		return
	}
	c.SetDeadline(time.Time{})
	switch proto {
	case protoRaft:
		select {
		case m.raftConns <- conn:
		case <-m.closed:
			conn.Close()
		}
	case protoForward:
		m.cfg.Forward(conn)
	case protoPubSub:
		if m.cfg.PubSub == nil {
			conn.Close()
			return
		}
		m.cfg.PubSub(conn)
	case protoHello:
		m.answerHello(conn)
	}
}

// refuse counts a refused connection and logs it with its source, at most
// one line per reason every refuseLogEvery (the rest are counted in the
// next line's repeated=N): a flood of strangers cannot flood the log.
func (m *Mux) refuse(from net.Addr, node, reason string, err error) {
	m.cfg.Gate.Reject(reason)
	m.logMu.Lock()
	l := m.logged[reason]
	now := time.Now()
	if !l.at.IsZero() && now.Sub(l.at) < refuseLogEvery {
		l.repeated++
		m.logged[reason] = l
		m.logMu.Unlock()
		return
	}
	m.logged[reason] = refuseLog{at: now}
	m.logMu.Unlock()
	attrs := []any{"from", from.String(), "reason", reason, "error", err}
	if node != "" {
		attrs = append(attrs, "peer_node", node)
	}
	if l.repeated > 0 {
		attrs = append(attrs, "repeated", l.repeated)
	}
	m.cfg.Logger.Warn("raft port: refused a connection", attrs...)
}

// refuseLogEvery is how often each reason of a refused connection is
// logged at most.
const refuseLogEvery = 10 * time.Second

type refuseLog struct {
	at       time.Time
	repeated int
}

// slotTLSConn is a TLS connection over one that holds a slot: closing it
// frees the slot and forgets the peer.
type slotTLSConn struct {
	*tls.Conn
	slot    net.Conn
	untrack func()
	once    sync.Once
}

func (c *slotTLSConn) Close() error {
	err := c.Conn.Close()
	c.slot.Close()
	c.once.Do(c.untrack)
	return err
}

// rejectReason names why a TLS handshake failed, as the metric counts it.
func rejectReason(err error) string {
	var pe *certs.PeerError
	var rh tls.RecordHeaderError
	var ne net.Error
	switch {
	case errors.As(err, &pe):
		return pe.Reason
	case errors.As(err, &rh):
		return "plaintext"
	case errors.As(err, &ne) && ne.Timeout():
		return "handshake_timeout"
	}
	return "handshake"
}

// Accept waits for the next Raft connection (raft.StreamLayer).
func (m *Mux) Accept() (net.Conn, error) {
	select {
	case c := <-m.raftConns:
		return c, nil
	case <-m.closed:
		return nil, net.ErrClosed
	}
}

// Close stops accepting and waits for the accept loop; connections already
// routed are their owners' to close.
func (m *Mux) Close() error {
	m.closeOnce.Do(func() {
		close(m.closed)
		m.ln.Close()
	})
	m.wg.Wait()
	return nil
}

// Addr is the advertised address (raft.StreamLayer).
func (m *Mux) Addr() net.Addr { return m.cfg.Advertise }

// Dial connects to a peer's Raft port for Raft (raft.StreamLayer).
func (m *Mux) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	var tlsCfg *tls.Config
	if m.cfg.DialTLS != nil {
		tlsCfg = m.cfg.DialTLS(string(addr))
	}
	return dialProto(string(addr), timeout, protoRaft, m.cfg.Cluster(), tlsCfg)
}

// dialProto connects to a Raft port, completes the TLS handshake when
// tlsCfg is set, and sends the preamble: which protocol follows, and the
// dialler's cluster id.
func dialProto(addr string, timeout time.Duration, proto byte, cluster command.ClusterID, tlsCfg *tls.Config) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c.SetDeadline(time.Now().Add(timeout))
	if tlsCfg != nil {
		tc := tls.Client(c, tlsCfg)
		if err := tc.Handshake(); err != nil {
			c.Close()
			return nil, err
		}
		c = tc
	}
	if _, err := c.Write(append([]byte{proto}, cluster[:]...)); err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}
