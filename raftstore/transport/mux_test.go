package transport

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/certs"
	"github.com/idemgate/idemgate/command"
)

// testGate is the membership a node would give the Mux: members' hosts,
// an admission rule, and what it was told.
type testGate struct {
	members map[string]bool // hosts of members
	refuse  string          // Admit refuses with this reason ("": admits)

	mu       sync.Mutex
	rejected map[string]int
	tracked  map[string]int // by node, open now
	proved   []string       // every node Track was told of
}

func newTestGate() *testGate {
	return &testGate{members: map[string]bool{}, rejected: map[string]int{}, tracked: map[string]int{}}
}

func (g *testGate) MemberHost(ip string) bool { return g.members[ip] }

func (g *testGate) Admit(node string, cluster command.ClusterID) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refuse != "" {
		return g.refuse, errors.New("refused by the test's gate")
	}
	return "", nil
}

func (g *testGate) Track(c net.Conn, node string) func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tracked[node]++
	g.proved = append(g.proved, node)
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.tracked[node]--
	}
}

func (g *testGate) Reject(reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rejected[reason]++
}

func (g *testGate) count(reason string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rejected[reason]
}

// waitCount waits (bounded) until reason was counted at least n times: a
// refusal is counted just after the connection closes.
func (g *testGate) waitCount(t *testing.T, reason string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); g.count(reason) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%s counted %d times, want %d", reason, g.count(reason), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startMux serves a Mux on a loopback port; forwarded connections are sent
// on the returned channel.
func startMux(t *testing.T, g *testGate, edit func(*Config)) (*Mux, string, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	forwarded := make(chan net.Conn, 16)
	cfg := Config{Advertise: ln.Addr(), MaxConns: 64, Gate: g, Logger: discard,
		Forward: func(c net.Conn) { forwarded <- c },
		Hello:   func() (Hello, bool) { return Hello{Node: "n1", State: HelloMember}, true },
		Cluster: func() command.ClusterID { return command.ClusterID{} }}
	if edit != nil {
		edit(&cfg)
	}
	m := NewMux(ln, cfg)
	t.Cleanup(func() { m.Close() })
	return m, ln.Addr().String(), forwarded
}

// closedByServer reports whether c is closed by the other side (bounded
// wait: a refused connection is closed at once, a slow one by a timeout).
func closedByServer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestMuxRoutesByProtocolByte: Raft connections go to Accept, forwarding
// to Forward, hello is answered; an unknown byte is refused as
// bad_protocol, and a refusal by the gate under the gate's reason.
func TestMuxRoutesByProtocolByte(t *testing.T) {
	g := newTestGate()
	m, addr, forwarded := startMux(t, g, nil)

	out, err := m.Dial("127.0.0.1:1", time.Second) // nobody listens there
	if err == nil {
		out.Close()
		t.Fatal("dialled a closed port")
	}
	out, err = m.Dial(raft.ServerAddress(addr), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	in, err := m.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out.Write([]byte("rpc"))
	b := make([]byte, 3)
	in.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(in, b); err != nil || string(b) != "rpc" {
		t.Fatalf("the Raft connection carried %q, %v", b, err)
	}

	fc, err := dialProto(addr, 5*time.Second, protoForward, command.ClusterID{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	select {
	case c := <-forwarded:
		c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("a forwarding connection was not handed to Forward")
	}

	h, err := AskHello(Peer{ID: "n1", Addr: addr, Timeout: 5 * time.Second})
	if err != nil || h.State != HelloMember {
		t.Fatalf("hello = %+v, %v", h, err)
	}

	bad, err := dialProto(addr, 5*time.Second, 'Z', command.ClusterID{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !closedByServer(bad) {
		t.Fatal("a connection with an unknown protocol byte stayed open")
	}
	g.waitCount(t, "bad_protocol", 1)

	g.mu.Lock()
	g.refuse = "not_member"
	g.mu.Unlock()
	for _, proto := range []byte{protoRaft, protoForward, protoPubSub} {
		c, err := dialProto(addr, 5*time.Second, proto, command.ClusterID{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !closedByServer(c) {
			t.Fatalf("protocol %q: a connection the gate refused stayed open", proto)
		}
	}
	g.waitCount(t, "not_member", 3)
	// Hello asks nothing of the gate: any node may ask.
	if _, err := AskHello(Peer{ID: "n1", Addr: addr, Timeout: 5 * time.Second}); err != nil {
		t.Fatalf("hello with a refusing gate: %v", err)
	}
}

// dialFrom connects from local address 127.0.0.<from>, saying nothing.
func dialFrom(t *testing.T, addr string, from byte) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// helloOn asks for a hello on c (plaintext) and reports whether it was
// answered.
func helloOn(c net.Conn) bool {
	c.Write(append([]byte{protoHello}, make([]byte, preambleLen-1)...))
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	var n [4]byte
	_, err := io.ReadFull(c, n[:])
	return err == nil
}

// TestMuxCaps: one address holds at most maxPendingPerIP connections still
// in their handshake; hosts that are not members' hold at most MaxConns
// together, while a member's host is not held to it; a closed connection
// gives both back.
func TestMuxCaps(t *testing.T) {
	g := newTestGate()
	g.members["127.0.0.9"] = true
	_, addr, _ := startMux(t, g, func(c *Config) { c.MaxConns = maxPendingPerIP + 2 })

	var pending []net.Conn
	for i := 0; i < maxPendingPerIP; i++ {
		pending = append(pending, dialFrom(t, addr, 2))
	}
	over := dialFrom(t, addr, 2)
	if !closedByServer(over) {
		t.Fatal("the connection over the per-address cap stayed open")
	}
	g.waitCount(t, "too_many_pending", 1)
	// Another host still gets in, and fills the shared cap.
	a, b := dialFrom(t, addr, 3), dialFrom(t, addr, 3)
	stranger := dialFrom(t, addr, 4)
	if !closedByServer(stranger) {
		t.Fatal("the connection over the shared cap stayed open")
	}
	g.waitCount(t, "too_many_connections", 1)
	// A member's host is not held to the shared cap.
	for i := 0; i < 3; i++ {
		if !helloOn(dialFrom(t, addr, 9)) {
			t.Fatalf("a member's connection %d was not served with the shared cap full", i)
		}
	}
	// Connections that finish their preamble (or close) give their
	// handshake place back: the address gets in again.
	if !helloOn(a) || !helloOn(b) {
		t.Fatal("a connection within the caps was not served")
	}
	for _, c := range pending {
		c.Close()
	}
	served := false
	for i := 0; i < 200 && !served; i++ { // the server sees the closes a moment later
		served = helloOn(dialFrom(t, addr, 2))
		if !served {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if !served {
		t.Fatal("after its connections closed, the address was still refused")
	}
	if n := g.count("too_many_pending") + g.count("too_many_connections"); n < 2 {
		t.Fatalf("%d refusals counted", n)
	}
}

// TestMuxTLS: with TLS, a plaintext client, a client of another CA and a
// client without a certificate are refused in the handshake under their
// reasons; a node of the CA is tracked under the id it proved until its
// connection closes.
func TestMuxTLS(t *testing.T) {
	dir, foreign := t.TempDir(), t.TempDir()
	issue := func(dir string, ids ...string) {
		ca, _, err := certs.LoadOrCreateCA(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if err := ca.IssueNode(dir, certs.NodeRequest{ID: id, Hosts: []string{"127.0.0.1"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	load := func(dir, id string) *certs.Source {
		src, err := certs.Load(certs.CAFile(dir), certs.NodeFile(dir, id), certs.NodeKeyFile(dir, id))
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	issue(dir, "n1", "n2")
	issue(foreign, "n2")
	g := newTestGate()
	_, addr, _ := startMux(t, g, func(c *Config) {
		c.TLS = load(dir, "n1").PeerServer(func(string, *x509.Certificate) error { return nil })
	})

	plain := dialFrom(t, addr, 1)
	plain.Write(append([]byte{protoHello}, make([]byte, preambleLen-1)...))
	if !closedByServer(plain) {
		t.Fatal("a plaintext hello on a TLS port stayed open")
	}
	g.waitCount(t, "plaintext", 1)

	stranger := load(foreign, "n2").PeerClient("", nil)
	stranger.VerifyConnection = nil // it trusts any server
	if _, err := AskHello(Peer{ID: "n1", Addr: addr, TLS: stranger, Timeout: 5 * time.Second}); err == nil {
		t.Fatal("a node of another CA was answered")
	}
	g.waitCount(t, "unknown_ca", 1)
	bare := &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true}
	if _, err := AskHello(Peer{ID: "n1", Addr: addr, TLS: bare, Timeout: 5 * time.Second}); err == nil {
		t.Fatal("a client without a certificate was answered")
	}
	g.waitCount(t, "no_certificate", 1)

	h, err := AskHello(Peer{ID: "n1", Addr: addr, TLS: load(dir, "n2").PeerClient("n1", nil), Timeout: 5 * time.Second})
	if err != nil || h.Node != "n1" {
		t.Fatalf("a node of the CA: %+v, %v", h, err)
	}
	g.mu.Lock()
	proved := append([]string(nil), g.proved...)
	g.mu.Unlock()
	if len(proved) != 1 || proved[0] != "n2" {
		t.Fatalf("tracked %v, want the one node that passed the handshake, n2", proved)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		g.mu.Lock()
		open := g.tracked["n2"]
		g.mu.Unlock()
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a closed connection is still tracked")
		}
	}
}
