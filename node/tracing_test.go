package node

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/internal/loopback"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestTracingWired: a node whose file sets tracing exports the gateway's,
// the store's and the API's spans as node n1, counts them in /metrics, and
// exports what is queued when it stops; a file without tracing starts none.
func TestTracingWired(t *testing.T) {
	col := testsupport.StartCollector(t)
	up := testsupport.Start(t)
	addrs, err := loopback.FreeAddrs(3)
	if err != nil {
		t.Fatal(err)
	}
	file := fmt.Sprintf("nodes: [{id: n1, raft: %q, api: %q, listen: %q}]\nupstream: http://%s\nroutes: [{name: pay, path: /pay}]\n",
		addrs[0], addrs[1], addrs[2], up.Addr)
	f, err := config.Parse([]byte(file + "tracing: {endpoint: " + col.URL + ", batch_timeout: 1m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	n, err := Start(Settings{File: f, Node: f.Nodes[0], DataDir: t.TempDir(), Bootstrap: true}, logger)
	if err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, "a leader", 10*time.Second, n.Store.Ready)
	if r, err := testsupport.Do("POST", "http://"+n.GW.Addr()+"/pay", "{}", "Idempotency-Key", "wired-1"); err != nil || r.Status != 201 {
		t.Fatalf("POST /pay = %+v %v", r, err)
	}
	if r, err := testsupport.Do("PUT", "http://"+n.API.Addr()+"/v1/kv/k", "v"); err != nil || r.Status != 200 {
		t.Fatalf("PUT /v1/kv/k = %+v %v", r, err)
	}
	if r, err := testsupport.Do("GET", "http://"+n.API.Addr()+"/metrics", ""); err != nil || !strings.Contains(r.Body, "idemgate_trace_spans_dropped_total 0") {
		t.Errorf("/metrics has no idemgate_trace_spans_dropped_total 0: %v", err)
	}
	n.Stop(5 * time.Second) // a batch_timeout of a minute: only the stop exports them
	names := map[string]int{}
	for _, s := range col.Spans() {
		if s.Node != "n1" {
			t.Errorf("span %s from node %q, want n1", s.Name, s.Node)
		}
		names[s.Name]++
	}
	want := map[string]int{"gateway pay": 1, "store.begin": 1, "store.complete": 1, "raft.commit": 3, "upstream": 1, "api PUT /v1/kv/{key...}": 1}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("spans by name = %v, want %v", names, want)
	}

	// Without tracing: no provider, no counters.
	f, err = config.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	n, err = Start(Settings{File: f, Node: f.Nodes[0], DataDir: t.TempDir(), Bootstrap: true}, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Kill()
	if n.Tracing != nil {
		t.Fatal("a file without tracing started it")
	}
}
