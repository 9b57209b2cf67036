package node

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/gateway"
	"github.com/idemgate/idemgate/internal/loopback"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/ttl"
)

// TestDefaultsComeFromTheirPackages: what the file leaves out takes the
// default of the package that owns the setting (defined once, there), and
// what it sets wins.
func TestDefaultsComeFromTheirPackages(t *testing.T) {
	if got, want := listenerLimits(config.Limits{}), gateway.DefaultConfig().Limits; got != want {
		t.Fatalf("limits left out = %+v, want gateway's defaults %+v", got, want)
	}
	set := listenerLimits(config.Limits{ReadTimeout: config.Duration(3 * time.Second), MaxRequestBody: 1 << 20})
	if set.ReadTimeout != 3*time.Second || set.MaxRequestBody != 1<<20 || set.WriteTimeout != gateway.DefaultConfig().WriteTimeout {
		t.Fatalf("limits with two set = %+v", set)
	}
	f, err := config.Parse([]byte("nodes: [{id: n1, raft: '127.0.0.1:1', api: '127.0.0.1:2', listen: '127.0.0.1:3'}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Raft != (config.Raft{}) || f.Limits != (config.Limits{}) {
		t.Fatalf("the config layer filled what the file left out: %+v %+v", f.Raft, f.Limits)
	}
	g := gatewayConfig(f, f.Nodes[0], time.Second, nil)
	if g.UpstreamTimeout != gateway.DefaultConfig().UpstreamTimeout || g.MaxResponseBody != gateway.DefaultConfig().MaxResponseBody {
		t.Fatalf("gateway config = %+v", g)
	}
	if f.Expiry != (config.Expiry{}) {
		t.Fatalf("the config layer filled expiry: %+v", f.Expiry)
	}
	if sc, err := sweeperConfig(f); err != nil || sc != ttl.DefaultSweeperConfig() {
		t.Fatalf("expiry left out = %+v, %v; want ttl's defaults %+v", sc, err, ttl.DefaultSweeperConfig())
	}
	f.Expiry = config.Expiry{BatchSize: 1000, BacklogPause: config.Duration(50 * time.Millisecond)}
	want := ttl.DefaultSweeperConfig()
	want.BatchSize, want.Pause = 1000, 50*time.Millisecond
	if sc, err := sweeperConfig(f); err != nil || sc != want {
		t.Fatalf("expiry with two set = %+v, %v; want %+v", sc, err, want)
	}
}

// TestSweeperConfigErrors: what the file alone cannot settle (a pause
// against the default interval) is refused at start, naming the field and
// its line. A batch of long keys over the command limit is not refused:
// the store splits expire commands to fit.
func TestSweeperConfigErrors(t *testing.T) {
	f, err := config.Parse([]byte("nodes: [{id: n1, raft: '127.0.0.1:1', api: '127.0.0.1:2'}]\nexpiry: {backlog_pause: 2s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	f.Name = "cluster.yaml"
	want := "cluster.yaml:2: expiry.backlog_pause: 2s is longer than expiry.interval (1s)"
	if _, err = sweeperConfig(f); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error = %v, want one line containing %q", err, want)
	}
	f, err = config.Parse([]byte("nodes: [{id: n1, raft: '127.0.0.1:1', api: '127.0.0.1:2'}]\nexpiry: {batch_size: 4096}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := sweeperConfig(f); err != nil || sc.BatchSize != 4096 {
		t.Fatalf("batch_size 4096: %+v, %v", sc, err)
	}
}

// TestAdvertisedAddresses: a node binds one address and tells the cluster
// another; the membership shows what the others are told to dial.
func TestAdvertisedAddresses(t *testing.T) {
	addrs, err := loopback.FreeAddrs(3)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addrs[0])
	advertised := "127.0.0.3:" + port // a single node never dials itself
	f, err := config.Parse([]byte(fmt.Sprintf("nodes: [{id: n1, raft: %q, advertise_raft: %q, api: %q, advertise_api: 'api.example:9', listen: %q}]\nupstream: http://127.0.0.1:1\n",
		addrs[0], advertised, addrs[1], addrs[2])))
	if err != nil {
		t.Fatal(err)
	}
	n, err := Start(Settings{File: f, Node: f.Nodes[0], DataDir: t.TempDir(), Bootstrap: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(time.Second)
	testsupport.WaitFor(t, "a leader", 10*time.Second, n.Store.Ready)
	servers, err := n.Store.Servers()
	if err != nil || len(servers) != 1 || servers[0].RaftAddr != advertised {
		t.Fatalf("membership = %+v, %v; want n1 at %s", servers, err, advertised)
	}
	r, err := testsupport.Do("GET", "http://"+n.API.Addr()+"/v1/cluster", "")
	if err != nil || !strings.Contains(r.Body, `"api":"api.example:9"`) || !strings.Contains(r.Body, advertised) {
		t.Fatalf("/v1/cluster = %s, %v; want the advertised addresses", r.Body, err)
	}
}
