// Package democluster starts a cluster of idemgate nodes inside this
// process, on free loopback ports: the demo's and the bench's cluster, and
// the one tests use when they want real nodes without processes. The
// serve path never uses it: a served node is one node.Node of a cluster
// file.
package democluster

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/idemgate/idemgate/certs"
	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/internal/loopback"
	"github.com/idemgate/idemgate/node"
)

// Start starts n nodes on free loopback ports, data in dir, in front of
// upstream, and waits until every one is ready. secure
// makes a CA and node certificates in dir/certs and turns TLS on for the
// Raft ports (mutual), the API and the gateway listeners.
func Start(dir string, n int, upstream string, secure bool) ([]*node.Node, *config.File, error) {
	ports, err := loopback.FreeAddrs(4 * n)
	if err != nil {
		return nil, nil, err
	}
	var y strings.Builder
	y.WriteString("nodes:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&y, "  - {id: n%d, raft: %q, api: %q, listen: %q, resp: %q}\n", i+1, ports[4*i], ports[4*i+1], ports[4*i+2], ports[4*i+3])
	}
	fmt.Fprintf(&y, `data_dir: %q
upstream: http://%s
raft: {heartbeat_timeout: 500ms, election_timeout: 500ms}
routes:
  - {name: pay, path: /pay, tenant: "header:X-User-Id", processing_timeout: 5s, on_in_flight: conflict, on_unknown: reject, reconcile_id: "json:/charge"}
  - {name: pay-wait, path: /pay-wait, scope: pay, tenant: "header:X-User-Id", processing_timeout: 5s, on_in_flight: wait, wait_timeout: 3s, on_unknown: reject, reconcile_id: "json:/charge"}
`, dir+"/{id}", upstream)
	if secure {
		cdir := filepath.Join(dir, "certs")
		ca, _, err := certs.LoadOrCreateCA(cdir)
		if err != nil {
			return nil, nil, err
		}
		for i := 0; i < n; i++ {
			if err := ca.IssueNode(cdir, certs.NodeRequest{ID: fmt.Sprintf("n%d", i+1), Hosts: []string{"127.0.0.1"}}); err != nil {
				return nil, nil, err
			}
		}
		fmt.Fprintf(&y, "tls: {ca: %q, cert: %q, key: %q, gateway: \"on\"}\n", certs.CAFile(cdir), certs.NodeFile(cdir, "{id}"), certs.NodeKeyFile(cdir, "{id}"))
	}
	file, err := config.Parse([]byte(y.String()))
	if err != nil {
		return nil, nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var nodes []*node.Node
	for _, cn := range file.Nodes {
		s := node.Settings{File: file, Node: cn, DataDir: file.DataDirFor(cn.ID), Bootstrap: true}
		err := s.LoadTLS()
		var nd *node.Node
		if err == nil {
			nd, err = node.Start(s, quiet)
		}
		if err != nil {
			for _, x := range nodes {
				x.Stop(time.Second)
			}
			return nil, nil, err
		}
		nodes = append(nodes, nd)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		ready := 0
		for _, nd := range nodes {
			if nd.Store.Ready() {
				ready++
			}
		}
		if ready == len(nodes) {
			return nodes, file, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nodes, file, errors.New("the demo cluster did not elect a leader within 15 s")
}

// SumCounter sums every series of the counter name in n's registry.
func SumCounter(n *node.Node, name string) float64 {
	families, err := n.Reg.Gather()
	if err != nil {
		return 0
	}
	total := 0.0
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			total += counterValue(m)
		}
	}
	return total
}

func counterValue(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return 0
}
