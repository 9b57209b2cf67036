package node

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/internal/loopback"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestStoreOnlyNode: a file without upstream starts the store and the API,
// no gateway; KV works; a listen given is ignored with a warning; Kill and
// Stop do not need a gateway. With an upstream (--upstream on such a file)
// but no listen, Start names the field.
func TestStoreOnlyNode(t *testing.T) {
	addrs, err := loopback.FreeAddrs(3)
	if err != nil {
		t.Fatal(err)
	}
	f, err := config.Parse([]byte(fmt.Sprintf("nodes: [{id: n1, raft: %q, api: %q, listen: %q}]\n", addrs[0], addrs[1], addrs[2])))
	if err != nil {
		t.Fatal(err)
	}
	log := &testsupport.Buffer{}
	n, err := Start(Settings{File: f, Node: f.Nodes[0], DataDir: t.TempDir(), Bootstrap: true}, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if n.GW != nil || n.GatewayLine("") != "gateway off (no upstream: store only)" {
		t.Fatalf("store-only node: GW = %v, line %q", n.GW, n.GatewayLine(""))
	}
	if !strings.Contains(log.String(), "listen is ignored") {
		t.Errorf("no warning that listen is ignored: %q", log.String())
	}
	testsupport.WaitFor(t, "a leader", 10*time.Second, n.Store.Ready)
	r, err := testsupport.Do("PUT", "http://"+n.API.Addr()+"/v1/kv/k?nx=1", "v")
	if err != nil || r.Status != 201 {
		t.Fatalf("PUT /v1/kv/k = %d %s %v", r.Status, r.Body, err)
	}
	if r, err := testsupport.Do("GET", "http://"+n.API.Addr()+"/v1/kv/k", ""); err != nil || r.Body != "v" {
		t.Fatalf("GET /v1/kv/k = %d %q %v", r.Status, r.Body, err)
	}
	n.Kill()

	f.Upstream = "http://127.0.0.1:1" // as serve's --upstream sets it
	f.Nodes[0].Listen = ""
	_, err = Start(Settings{File: f, Node: f.Nodes[0], DataDir: t.TempDir(), Bootstrap: true}, slog.New(slog.NewTextHandler(log, nil)))
	if err == nil || !strings.Contains(err.Error(), "nodes[0].listen: required when upstream is set") {
		t.Fatalf("upstream without listen: %v", err)
	}
}
