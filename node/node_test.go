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
	n, err := Start(Settings{File: f, Node: f.Nodes[0], DataDir: t.TempDir()}, slog.New(slog.NewTextHandler(io.Discard, nil)))
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
