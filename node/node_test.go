package node

import (
	"testing"
	"time"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/gateway"
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
