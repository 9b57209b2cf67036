package raftstore

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/idemgate/idemgate/certs"
	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/localcluster"
	"github.com/idemgate/idemgate/raftstore/transport"
	"github.com/idemgate/idemgate/storeapi"
)

// issueCerts makes a CA in dir and a certificate for each id.
func issueCerts(t testing.TB, dir string, ids ...string) {
	t.Helper()
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

func loadSource(t testing.TB, caDir, certDir, id string) *certs.Source {
	t.Helper()
	src, err := certs.Load(certs.CAFile(caDir), certs.NodeFile(certDir, id), certs.NodeKeyFile(certDir, id))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// startTLSCluster starts a 3-node cluster whose Raft ports require mutual
// TLS; it returns the cluster and the directory of its CA.
func startTLSCluster(t *testing.T) (*TestCluster, string) {
	dir := t.TempDir()
	issueCerts(t, dir, "n1", "n2", "n3", "n9") // n9: signed by the CA, never a member
	c := StartTestCluster(t, 3, func(cfg *Config) {
		cfg.PeerTLS = loadSource(t, dir, dir, cfg.NodeID)
	})
	return c, dir
}

// forgedFrames are the forwarding requests of the attacks: plant a KV key, a
// record for a customer's future key, a forged completed response with a
// Set-Cookie for a key that exists, a never-expiring token, the reserved
// node keys, and membership changes.
func forgedFrames(key string) [][]byte {
	cmds := []command.Command{
		{Type: command.TypeKVSet, Key: []byte(key), Value: []byte("forged")},
		{Type: command.TypeRecordBegin, Key: command.RecordKey("pay", "alice", "future-"+key)},
		{Type: command.TypeRecordComplete, Key: command.RecordKey("pay", "alice", "order-1"), Fence: 1, Status: 200,
			Headers: []command.Header{{Name: []byte("Set-Cookie"), Value: []byte("session=attacker")}}, Body: []byte("paid")},
		{Type: command.TypeRecordRelease, Key: command.RecordKey("pay", "alice", "order-1")},
		{Type: command.TypeTokenIssue, Key: command.TokenKey("form", key)},
		{Type: command.TypeKVSet, Key: []byte("\x00node/n1"), Value: []byte("10.6.6.6:1")},
	}
	var frames [][]byte
	for _, c := range cmds {
		frames = append(frames, forwardFrame(transport.Apply, c.Encode(nil)))
	}
	frames = append(frames, forwardFrame(transport.AddVoter, []byte("evil\x00127.0.0.1:1")), forwardFrame(transport.Remove, []byte("n1")))
	return frames
}

// attackForward sends the forged forwarding frames over conn after the
// protocol byte, and reports whether any answer came back.
func attackForward(t *testing.T, conn net.Conn, key string) bool {
	t.Helper()
	defer conn.Close()
	msg := append([]byte{wireForward}, make([]byte, len(command.ClusterID{}))...)
	for _, f := range forgedFrames(key) {
		msg = append(msg, f...)
	}
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write(msg); err != nil {
		return false
	}
	_, _, err := readAnswer(conn)
	return err == nil
}

// plainLayer dials a Raft port without TLS, as an attacker's transport would.
type plainLayer struct{ addr net.Addr }

func (l plainLayer) Accept() (net.Conn, error) { select {} }
func (l plainLayer) Close() error              { return nil }
func (l plainLayer) Addr() net.Addr            { return l.addr }
func (l plainLayer) Dial(a raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return dialPeer(string(a), timeout, wireRaft, command.ClusterID{}, nil)
}

func TestPeerTLSRefusesOutsiders(t *testing.T) {
	c, dir := startTLSCluster(t)
	leader := c.WaitLeader(10 * time.Second)
	ctx := context.Background()
	if _, err := c.Store(leader).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("before"), Value: []byte("1")})); err != nil {
		t.Fatal(err)
	}
	// A customer's completed payment, which a forged release would let run
	// again and a forged complete would overwrite.
	order := command.RecordKey("pay", "alice", "order-1")
	res, err := c.Store(leader).Begin(ctx, command.BeginRequest{Key: order, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Store(leader).Complete(ctx, command.CompleteRequest{Key: order, Fence: res.Fence, Status: 201, Body: []byte("charged once")}); err != nil {
		t.Fatal(err)
	}
	c.WaitConverged(10 * time.Second)
	target := c.Cfgs[leader].RaftBind
	hashes := func() [][32]byte {
		var out [][32]byte
		for _, s := range c.Running() {
			h, err := localcluster.StateHash(s.FSM())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, h)
		}
		return out
	}
	before := hashes()
	term := c.Store(leader).Raft().CurrentTerm()

	// 1. Plaintext forwarding frame.
	conn, err := net.Dial("tcp", target)
	if err != nil {
		t.Fatal(err)
	}
	if attackForward(t, conn, "planted-plain") {
		t.Error("a plaintext forwarding frame was answered")
	}

	// 2. Plaintext Raft RPCs: an AppendEntries with a huge term carrying a
	// forged command stamped ten years ahead (without TLS it panics the
	// leader: "log not found"), a fake leader's heartbeat (without TLS every
	// node would follow it), and an InstallSnapshot of garbage.
	trans := raft.NewNetworkTransport(plainLayer{addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}, 1, time.Second, io.Discard)
	forged := command.Command{Type: command.TypeKVSet, Key: []byte("planted-raft"), Value: []byte("x"), Stamp: time.Now().Add(10 * 365 * 24 * time.Hour).UnixNano()}
	req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("evil"), Addr: []byte("127.0.0.1:1")},
		Term: term + 1<<40, PrevLogEntry: 0, LeaderCommitIndex: 1 << 40,
		Entries: []*raft.Log{{Index: 1 << 30, Term: term + 1<<40, Type: raft.LogCommand, Data: forged.Encode(nil)}}}
	var resp raft.AppendEntriesResponse
	err = trans.AppendEntries(raft.ServerID(c.Cfgs[leader].NodeID), raft.ServerAddress(target), req, &resp)
	if err == nil {
		t.Errorf("a plaintext AppendEntries was answered: %+v", resp)
	}
	heartbeat := &raft.AppendEntriesRequest{RPCHeader: req.RPCHeader, Term: term + 1, LeaderCommitIndex: 0}
	if err := trans.AppendEntries(raft.ServerID(c.Cfgs[leader].NodeID), raft.ServerAddress(target), heartbeat, &resp); err == nil {
		t.Errorf("a fake leader's plaintext heartbeat was answered: %+v", resp)
	}
	var snapResp raft.InstallSnapshotResponse
	snapReq := &raft.InstallSnapshotRequest{RPCHeader: req.RPCHeader, SnapshotVersion: raft.SnapshotVersionMax, Term: term + 1<<40, LastLogIndex: 1 << 30, Size: 8}
	if err := trans.InstallSnapshot(raft.ServerID(c.Cfgs[leader].NodeID), raft.ServerAddress(target), snapReq, &snapResp, strings.NewReader("garbage!")); err == nil {
		t.Errorf("a plaintext InstallSnapshot was answered")
	}
	trans.Close()

	// 3. A certificate from another CA that names a member.
	foreign := t.TempDir()
	issueCerts(t, foreign, "n1")
	// 4. A certificate from the cluster's CA for a node that is not a member.
	for _, tc := range []struct {
		name, reason string
		src          *certs.Source
	}{
		{"foreign CA", "unknown_ca", loadSource(t, foreign, foreign, "n1")},
		{"not a member", "not_member", loadSource(t, dir, dir, "n9")},
	} {
		beforeReason := testutil.ToFloat64(c.Store(leader).members.rejected.WithLabelValues(tc.reason))
		attacker := tc.src.PeerClient("", nil)
		attacker.VerifyConnection = nil // an attacker trusts any server
		conn, err := dialProtoRaw(target, attacker)
		if err == nil && attackForward(t, conn, "planted-"+tc.name) {
			t.Errorf("%s: a forwarding frame was answered", tc.name)
		}
		// The refusal is counted just after the alert is sent: wait a little.
		counted := func() bool {
			return testutil.ToFloat64(c.Store(leader).members.rejected.WithLabelValues(tc.reason)) > beforeReason
		}
		for deadline := time.Now().Add(2 * time.Second); !counted() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if !counted() {
			t.Errorf("%s: idemgate_peer_rejected_total{reason=%q} did not count it", tc.name, tc.reason)
		}
	}
	if got := testutil.ToFloat64(c.Store(leader).members.rejected.WithLabelValues("plaintext")); got < 2 {
		t.Errorf("plaintext rejections counted %v, want at least 2", got)
	}

	// Nothing changed: same state on every node, same term, same leader.
	time.Sleep(200 * time.Millisecond)
	after := hashes()
	for i := range before {
		if before[i] != after[i] {
			t.Errorf("node %d's state changed under the attacks", i)
		}
	}
	if now := c.Store(leader).Raft().CurrentTerm(); now != term || !c.Store(leader).IsLeader() {
		t.Errorf("term %d -> %d, leader still: %v", term, now, c.Store(leader).IsLeader())
	}
	for _, key := range []string{"planted-plain", "planted-raft", "planted-foreign CA", "planted-not a member"} {
		if _, err := c.Store(leader).KV(ctx, []byte(key), false); err != command.ErrNotFound {
			t.Errorf("key %q: %v, want not found", key, err)
		}
	}

	servers, err := c.Store(leader).Servers()
	if err != nil || len(servers) != 3 {
		t.Errorf("membership after the attacks: %+v, %v; want the 3 nodes", servers, err)
	}
	if rec, err := c.Store(leader).FSM().Record(order, time.Now()); err != nil || string(rec.Body) != "charged once" || len(rec.Headers) != 0 {
		t.Errorf("the completed payment after the attacks: %+v, %v", rec, err)
	}

	// A real member still replicates, forwarding included.
	follower := (leader + 1) % 3
	if _, err := c.Store(follower).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("after"), Value: []byte("2")})); err != nil {
		t.Fatalf("a member's forwarded write failed: %v", err)
	}
	c.WaitConverged(10 * time.Second)
}

// dialProtoRaw dials with a TLS client config and says nothing yet; an error
// means the handshake failed on this side.
func dialProtoRaw(addr string, cfg *tls.Config) (net.Conn, error) {
	raw, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(raw, cfg)
	tc.SetDeadline(time.Now().Add(2 * time.Second))
	if err := tc.Handshake(); err != nil {
		raw.Close()
		return nil, err
	}
	return tc, nil
}

// TestRemovedNodeIsCutOff: a connection opened with a member's key before
// that member was removed is closed once the removal is known: nothing sent
// on it afterwards is applied, and the key no longer gets a new one.
func TestRemovedNodeIsCutOff(t *testing.T) {
	c, dir := startTLSCluster(t)
	leader := c.WaitLeader(10 * time.Second)
	victim := (leader + 1) % 3
	id := c.Cfgs[victim].NodeID
	stolen := loadSource(t, dir, dir, id)
	conn, err := dialPeer(c.Cfgs[leader].RaftBind, time.Second, wireForward, command.ClusterID{}, stolen.PeerClient("", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// While a member, the key cannot add voters that do not exist (each
	// would count against the quorum): the leader probes them first.
	answers := bufio.NewReader(conn)
	for _, fake := range []string{"x1", "x2", "x3"} {
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		conn.Write(forwardFrame(transport.AddVoter, []byte(fake+"\x00127.0.0.1:1")))
		status, payload, err := readAnswer(answers)
		if err != nil {
			t.Fatalf("add-voter %s: no answer: %v", fake, err)
		}
		if status != wireStatusError || len(payload) == 0 || int(payload[0]) >= len(wireErrors.Coded) || wireErrors.Coded[payload[0]] != storeapi.ErrUnreachableNode {
			t.Fatalf("add-voter %s = status %d %q, want it refused as unreachable", fake, status, payload)
		}
	}
	if servers, _ := c.Store(leader).Servers(); len(servers) != 3 {
		t.Fatalf("membership after the fake adds: %+v", servers)
	}
	c.Stop(victim)
	if err := c.Store(leader).RemoveServer(context.Background(), id, false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // a few membership refreshes
	cmd := command.KVSetCommand(command.KVSetRequest{Key: []byte("after-removal"), Value: []byte("x")})
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	conn.Write(forwardFrame(transport.Apply, cmd.Encode(nil)))
	var hdr [13]byte
	if _, err := io.ReadFull(conn, hdr[:]); err == nil {
		t.Fatal("a removed node's old connection still had its frame answered")
	}
	if _, err := c.Store(leader).KV(context.Background(), []byte("after-removal"), false); err != command.ErrNotFound {
		t.Fatalf("the removed node's write: %v, want not found", err)
	}
	if again, err := dialProtoRaw(c.Cfgs[leader].RaftBind, stolen.PeerClient("", nil)); err == nil && attackForward(t, again, "removed-again") {
		t.Fatal("the removed node's key got a new connection answered")
	}
	if got := testutil.ToFloat64(c.Store(leader).members.rejected.WithLabelValues("removed_member")); got < 1 {
		t.Fatalf("removed_member closures counted %v", got)
	}
}
