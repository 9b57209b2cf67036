package raftstore

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/idemgate/idemgate/backup"
	"github.com/idemgate/idemgate/certs"
	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/localcluster"
	"github.com/idemgate/idemgate/internal/loopback"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/storeapi"
)

// newCluster is a TestCluster whose nodes are configured but not started,
// with Bootstrap as bootstrap says.
func newCluster(t *testing.T, n int, bootstrap bool) *TestCluster {
	return NewTestCluster(t, n, func(cfg *Config) { cfg.Bootstrap = bootstrap })
}

// startAll starts the given nodes at the same moment.
func startAll(c *TestCluster, idx ...int) {
	var wg sync.WaitGroup
	for _, i := range idx {
		wg.Add(1)
		go func() { defer wg.Done(); c.Start(i) }()
	}
	wg.Wait()
}

// waitRounds waits until node i has asked its peers who they are n more
// times: whatever those answers allowed it to do, it has done.
func waitRounds(t *testing.T, s *Store, n int64) {
	t.Helper()
	want := s.join.rounds.Load() + n
	for deadline := time.Now().Add(30 * time.Second); s.join.rounds.Load() < want; {
		if time.Now().After(deadline) {
			t.Fatalf("%s asked its peers %d times, want %d", s.NodeID(), s.join.rounds.Load(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noCluster fails unless node s holds no configuration and knows no leader.
func noCluster(t *testing.T, s *Store, why string) {
	t.Helper()
	if s.hasConfiguration() || s.raft.LastIndex() != 0 {
		t.Fatalf("%s: %s has a configuration (last index %d): %+v", why, s.NodeID(), s.raft.LastIndex(), s.raft.GetConfiguration().Configuration())
	}
	if addr, _ := s.raft.LeaderWithID(); addr != "" {
		t.Fatalf("%s: %s follows leader %s", why, s.NodeID(), addr)
	}
	if s.Ready() {
		t.Fatalf("%s: %s is ready", why, s.NodeID())
	}
}

// TestEmptyNodesWaitWithoutBootstrap: three empty data directories started
// together without the bootstrap instruction never form a cluster; they
// wait, saying so. One of them restarted with --bootstrap forms it, and
// the others join it.
func TestEmptyNodesWaitWithoutBootstrap(t *testing.T) {
	c := newCluster(t, 3, false)
	startAll(c, 0, 1, 2)
	for i := range c.Cfgs {
		waitRounds(t, c.Store(i), 3)
	}
	for i := range c.Cfgs {
		noCluster(t, c.Store(i), "no --bootstrap")
		if got := c.Store(i).NotReady(); !strings.Contains(got, "waits to be added") {
			t.Errorf("%s readyz detail = %q, want it to say it waits to be added", c.Cfgs[i].NodeID, got)
		}
	}
	c.Stop(0)
	c.Cfgs[0].Bootstrap = true
	c.Start(0)
	c.WaitLeader(20 * time.Second)
	c.WaitClusterID(10 * time.Second)
	putKeys(t, c, "k", 5)
	c.WaitConverged(10 * time.Second)
}

// TestBootstrapWaitsForEveryNode: nodes told to bootstrap wait until every
// node of the file answers; two of three never form the cluster alone.
func TestBootstrapWaitsForEveryNode(t *testing.T) {
	c := newCluster(t, 3, true)
	startAll(c, 0, 1)
	waitRounds(t, c.Store(0), 3)
	waitRounds(t, c.Store(1), 3)
	noCluster(t, c.Store(0), "n3 not started")
	noCluster(t, c.Store(1), "n3 not started")
	if got := c.Store(0).NotReady(); !strings.Contains(got, "forming a new cluster") {
		t.Errorf("readyz detail = %q, want it to say it is forming a cluster", got)
	}
	c.Start(2)
	c.WaitLeader(20 * time.Second)
	c.WaitClusterID(10 * time.Second)
	ids := map[command.ClusterID]bool{}
	for i := range c.Cfgs {
		ids[c.Store(i).FSM().ClusterID()] = true
	}
	if len(ids) != 1 {
		t.Fatalf("cluster ids %v, want one", ids)
	}
}

// TestWipedNodesNeverSplitARecoveredCluster is docs/operations.md's recover procedure
// at its worst: two nodes lost, the survivor recovered alone, the two
// wiped and started at the same moment as the survivor, and told to
// bootstrap. They must not form a second cluster (the survivor holds
// one); added by the admin, they join it, and every acknowledged write is
// there once.
func TestWipedNodesNeverSplitARecoveredCluster(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	leader := c.WaitLeader(5 * time.Second)
	ctx := ctxT(t, 60*time.Second)
	acked := putKeys(t, c, "paid", 20)
	order := command.RecordKey("pay", "alice", "order-42")
	res, err := c.Store(leader).Begin(ctx, command.BeginRequest{Key: order, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Store(leader).Complete(ctx, command.CompleteRequest{Key: order, Fence: res.Fence, Status: 201, Body: []byte("charged once")}); err != nil {
		t.Fatal(err)
	}
	c.WaitConverged(10 * time.Second)
	id := c.Store(0).FSM().ClusterID()
	for i := range c.Cfgs {
		c.Stop(i)
	}
	if _, err := backup.Recover(c.Cfgs[0].Offline(), Voters(c.Cfgs[0].Peers[:1])); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 2} {
		if err := os.RemoveAll(c.Cfgs[i].DataDir); err != nil {
			t.Fatal(err)
		}
		c.Cfgs[i].Bootstrap = true // the worst case: a unit that says --bootstrap
	}
	startAll(c, 0, 1, 2)
	testsupport.WaitFor(t, "the survivor leads alone", 20*time.Second, func() bool { return c.Store(0).IsLeader() })
	waitRounds(t, c.Store(1), 3)
	waitRounds(t, c.Store(2), 3)
	noCluster(t, c.Store(1), "wiped beside a survivor")
	noCluster(t, c.Store(2), "wiped beside a survivor")

	for _, i := range []int{1, 2} {
		if err := c.Store(0).AddVoter(ctx, c.Cfgs[i].NodeID, c.Cfgs[i].RaftBind); err != nil {
			t.Fatalf("add %s: %v", c.Cfgs[i].NodeID, err)
		}
	}
	c.WaitConverged(20 * time.Second)
	for i := range c.Cfgs {
		s := c.Store(i)
		if got := s.FSM().ClusterID(); got != id {
			t.Errorf("%s: cluster %s, want the survivor's %s", s.NodeID(), got, id)
		}
		for key, v := range acked {
			if e, err := s.KV(ctx, []byte(key), false); err != nil || e.Version != v {
				t.Errorf("%s: %s = v%d, %v; want v%d", s.NodeID(), key, e.Version, err, v)
			}
		}
		r, err := s.Record(ctx, order, false)
		if err != nil || r.State != command.StateCompleted || string(r.Body) != "charged once" {
			t.Errorf("%s: order-42 = %+v, %v; want it completed, charged once", s.NodeID(), r, err)
		}
	}
	again, err := c.Store(2).Begin(ctx, command.BeginRequest{Key: order, TTL: time.Hour})
	if err != nil || again.Code == command.CodeCreated {
		t.Errorf("order-42 begun again on a rejoined node: %+v, %v; want the completed record", again, err)
	}
}

// tlsLayer dials Raft ports with mutual TLS and a preamble of its choosing:
// an attacker's transport holding a certificate of the cluster's CA.
type tlsLayer struct {
	cfg     *tls.Config
	cluster command.ClusterID
}

func (l tlsLayer) Accept() (net.Conn, error) { select {} }
func (l tlsLayer) Close() error              { return nil }
func (l tlsLayer) Addr() net.Addr            { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (l tlsLayer) Dial(a raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return dialPeer(string(a), timeout, wireRaft, l.cluster, l.cfg)
}

// TestJoiningNodeCannotBePoisoned is the attack on a node waiting to be
// added: with the certificate of a member removed earlier, or of a node
// the CA signed that was never a member, an attacker sends the waiting
// node an AppendEntries at a huge term carrying a configuration that makes
// it a voter and a KV write. The node refuses both (it accepts Raft only
// from the voters its peers report, and the removed certificate is
// refused outright); added by the admin, it joins the real cluster with
// identical state. The removed node's id can be added again only with a
// new certificate.
func TestJoiningNodeCannotBePoisoned(t *testing.T) {
	dir := t.TempDir()
	issueCerts(t, dir, "n1", "n2", "n3", "n4", "n5", "n9")
	withCert := func(cfg *Config) { cfg.PeerTLS = loadSource(t, dir, dir, cfg.NodeID) }
	c := StartTestCluster(t, 3, withCert)
	leader := c.WaitLeader(5 * time.Second)
	ctx := ctxT(t, 90*time.Second)
	acked := putKeys(t, c, "k", 10)

	// n4 is added, then removed: its certificate is recorded.
	addrs, err := loopback.FreeAddrs(2)
	if err != nil {
		t.Fatal(err)
	}
	cfg4 := c.JoinConfig("n4", addrs[0])
	withCert(&cfg4)
	n4, err := Open(cfg4)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Store(leader).AddVoter(ctx, "n4", addrs[0]); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, "n4 caught up", 20*time.Second, func() bool { return n4.FSM().AppliedIndex() >= c.Store(leader).FSM().AppliedIndex() })
	n4.Close()
	if err := c.Store(leader).RemoveServer(ctx, "n4", true); err != nil {
		t.Fatal(err)
	}
	gone, err := c.Store(leader).FSM().RemovedNodes()
	if err != nil || len(gone) != 1 || gone[0].ID != "n4" || len(gone[0].Fingerprints) == 0 {
		t.Fatalf("removed nodes = %+v, %v; want n4 with its certificate", gone, err)
	}
	c.WaitConverged(10 * time.Second)

	// n5 waits to be added.
	cfg5 := c.JoinConfig("n5", addrs[1])
	withCert(&cfg5)
	n5, err := Open(cfg5)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n5.Close() })
	waitRounds(t, n5, 2)
	if v := n5.join.current(); v == nil || len(v.voters) != 3 || v.cluster != c.Store(0).FSM().ClusterID() {
		t.Fatalf("n5 learned %+v, want the cluster's three voters and id", v)
	}

	poison := func(name, reason string, src *certs.Source, cluster command.ClusterID) {
		t.Helper()
		before := testutil.ToFloat64(n5.members.rejected.WithLabelValues(reason))
		trans := raft.NewNetworkTransport(tlsLayer{cfg: src.PeerClient("", nil), cluster: cluster}, 1, 2*time.Second, io.Discard)
		defer trans.Close()
		term := uint64(1) << 40
		fake := raft.Configuration{Servers: []raft.Server{
			{ID: "n1", Address: raft.ServerAddress(c.Cfgs[0].RaftBind), Suffrage: raft.Voter},
			{ID: "n2", Address: raft.ServerAddress(c.Cfgs[1].RaftBind), Suffrage: raft.Voter},
			{ID: "n3", Address: raft.ServerAddress(c.Cfgs[2].RaftBind), Suffrage: raft.Voter},
			{ID: "n5", Address: raft.ServerAddress(addrs[1]), Suffrage: raft.Voter}}}
		write := command.KVSetCommand(command.KVSetRequest{Key: []byte("poison-" + name), Value: []byte("x")})
		req := &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(src.NodeID()), Addr: []byte("127.0.0.1:1")},
			Term:      term, PrevLogEntry: 0, PrevLogTerm: 0, LeaderCommitIndex: 2,
			Entries: []*raft.Log{
				{Index: 1, Term: term, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(fake)},
				{Index: 2, Term: term, Type: raft.LogCommand, Data: write.Encode(nil)},
			}}
		var resp raft.AppendEntriesResponse
		if err := trans.AppendEntries("n5", raft.ServerAddress(addrs[1]), req, &resp); err == nil {
			t.Errorf("%s: the waiting node answered a forged AppendEntries: %+v", name, resp)
		}
		testsupport.WaitFor(t, name+": the refusal counted as "+reason, 5*time.Second, func() bool {
			return testutil.ToFloat64(n5.members.rejected.WithLabelValues(reason)) > before
		})
		noCluster(t, n5, name)
		if n5.raft.CurrentTerm() >= term {
			t.Fatalf("%s: n5 took the forged term", name)
		}
	}
	real := c.Store(0).FSM().ClusterID()
	poison("removed member", "removed_certificate", loadSource(t, dir, dir, "n4"), real)
	poison("CA-signed stranger", "not_member", loadSource(t, dir, dir, "n9"), real)
	poison("stranger, no cluster id", "not_member", loadSource(t, dir, dir, "n9"), command.ClusterID{})
	other, _ := command.NewClusterID()
	poison("another cluster's member", "cluster_mismatch", loadSource(t, dir, dir, "n1"), other)

	// The admin's routine add: n5 joins the real cluster.
	if err := c.Store(leader).AddVoter(ctx, "n5", addrs[1]); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, "n5 caught up", 20*time.Second, func() bool { return n5.FSM().AppliedIndex() >= c.Store(leader).FSM().AppliedIndex() })
	if err := n5.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	want, _ := localcluster.StateHash(c.Store(leader).FSM())
	if got, _ := localcluster.StateHash(n5.FSM()); got != want {
		t.Fatal("n5's state differs from the cluster's")
	}
	for key, v := range acked {
		if e, err := n5.KV(ctx, []byte(key), false); err != nil || e.Version != v {
			t.Errorf("n5: %s = v%d, %v; want v%d", key, e.Version, err, v)
		}
	}
	for _, name := range []string{"removed member", "CA-signed stranger", "stranger, no cluster id", "another cluster's member"} {
		if _, err := n5.KV(ctx, []byte("poison-"+name), false); !errors.Is(err, command.ErrNotFound) {
			t.Errorf("poison-%s on n5: %v, want not found", name, err)
		}
	}

	// n4 again, with its old certificate: refused, and told why.
	os.RemoveAll(cfg4.DataDir)
	n4, err = Open(cfg4)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Store(leader).AddVoter(ctx, "n4", addrs[0])
	n4.Close()
	if !errors.Is(err, storeapi.ErrMembership) || !strings.Contains(err.Error(), "new one") {
		t.Fatalf("re-adding n4 with its old certificate = %v, want it refused (a new certificate is needed)", err)
	}
	// With a new one it is a member again.
	issueCerts(t, dir, "n4")
	os.RemoveAll(cfg4.DataDir)
	cfg4.PeerTLS = loadSource(t, dir, dir, "n4")
	n4, err = Open(cfg4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n4.Close() })
	if err := c.Store(leader).AddVoter(ctx, "n4", addrs[0]); err != nil {
		t.Fatalf("re-adding n4 with a new certificate: %v", err)
	}
	testsupport.WaitFor(t, "n4 caught up again", 20*time.Second, func() bool { return n4.FSM().AppliedIndex() >= c.Store(leader).FSM().AppliedIndex() })
}
