package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/idemgate/idemgate/bench"
	"github.com/idemgate/idemgate/certs"
	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/internal/loopback"
)

type demoFlags struct {
	users, nodes, concurrency int
	noKill, without           bool
}

func demoCmd(args []string, stdout, stderr io.Writer) int {
	var f demoFlags
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&f.users, "users", 3700, "users who each pay once (clicking two or three times)")
	fs.IntVar(&f.nodes, "nodes", 3, "cluster nodes (1-7)")
	fs.IntVar(&f.concurrency, "concurrency", 128, "users clicking at the same moment")
	fs.BoolVar(&f.noKill, "no-kill", false, "do not kill the leader partway through")
	fs.BoolVar(&f.without, "without-idemgate", false, "also send the same clicks straight to the payment service, side by side")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: idemgate demo [--users N] [--nodes N] [--no-kill] [--without-idemgate]")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "idemgate demo: %v\n", err)
		return 2
	}
	switch {
	case f.users < 1 || f.users > 1_000_000:
		fmt.Fprintln(stderr, "idemgate demo: --users: want 1-1000000")
		return 2
	case f.nodes < 1 || f.nodes > 7:
		fmt.Fprintln(stderr, "idemgate demo: --nodes: want 1-7")
		return 2
	case f.concurrency < 1 || f.concurrency > 4096:
		fmt.Fprintln(stderr, "idemgate demo: --concurrency: want 1-4096")
		return 2
	}
	ok, err := runDemo(f, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "idemgate demo: %v\n", err)
		return 1
	}
	if !ok {
		return 1
	}
	return 0
}

func runDemo(f demoFlags, out io.Writer) (bool, error) {
	dir, err := os.MkdirTemp("", "idemgate-demo-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	pay := bench.NewPayments()
	if err := pay.Start(); err != nil {
		return false, err
	}
	defer pay.Stop()

	kill := "the leader is killed when 40% of users are done"
	if f.noKill || f.nodes == 1 {
		kill = "no node is killed"
	}
	fmt.Fprintf(out, "idemgate demo: %d users each pay once, double- and triple-clicking \"pay\";\n", f.users)
	fmt.Fprintf(out, "the payment service sometimes takes %s (the bank took 11 s that night) and the app retries after %s;\n",
		pay.Slow, 500*time.Millisecond)
	fmt.Fprintf(out, "a %d-node cluster on loopback, clicks spread over all nodes; %s.\n\n", f.nodes, kill)

	var cols []bench.IncidentColumn
	incident := bench.IncidentConfig{Users: f.users, Path: "/pay", Concurrency: f.concurrency,
		ClientTimeout: 500 * time.Millisecond, Deadline: 3 * time.Minute, Progress: out, Charges: pay.Total}
	if f.without {
		fmt.Fprintln(out, "without idemgate, straight to the payment service:")
		direct := incident
		direct.Targets = []string{"http://" + pay.Addr()}
		res, err := bench.RunIncident(direct)
		if err != nil {
			return false, err
		}
		pay.Quiesce(5 * time.Second) // slow charges still running belong to this run
		cols = append(cols, bench.IncidentColumn{Title: "without idemgate", Res: res, Charges: pay.Charges()})
	}

	nodes, file, err := startDemoCluster(dir, f.nodes, pay.Addr(), false)
	if err != nil {
		return false, err
	}
	defer func() {
		for _, n := range nodes {
			if n != nil {
				n.stop(2 * time.Second)
			}
		}
	}()
	fmt.Fprintln(out, "with idemgate:")
	withIdem := incident
	withIdem.WaitPath = "/pay-wait"
	withIdem.Reconcile = pay.Charged
	for _, n := range file.Nodes {
		withIdem.Targets = append(withIdem.Targets, "http://"+n.Listen)
	}
	if !f.noKill && f.nodes > 1 {
		withIdem.KillAt = 0.4
		withIdem.Kill = func() string {
			for i, n := range nodes {
				if n != nil && n.store.IsLeader() {
					nodes[i] = nil
					n.kill()
					return n.id
				}
			}
			return ""
		}
	}
	res, err := bench.RunIncident(withIdem)
	if err != nil {
		return false, err
	}
	pay.Quiesce(5 * time.Second)
	col := bench.IncidentColumn{Title: "with idemgate", Res: res, Charges: pay.Charges(), Gateway: true}
	for _, n := range nodes {
		if n != nil {
			col.Waits += sumCounter(n, "idemgate_in_flight_waits_total")
		}
	}
	cols = append(cols, col)
	fmt.Fprintln(out)
	return bench.WriteIncidentTable(out, f.users, cols), nil
}

// startDemoCluster starts n nodes on free loopback ports in dir. secure
// makes a CA and node certificates in dir/certs and turns TLS on for the
// Raft ports (mutual), the API and the gateway listeners.
func startDemoCluster(dir string, n int, upstream string, secure bool) ([]*node, *config.File, error) {
	ports, err := loopback.FreeAddrs(3 * n)
	if err != nil {
		return nil, nil, err
	}
	var y strings.Builder
	y.WriteString("nodes:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&y, "  - {id: n%d, raft: %q, api: %q, listen: %q}\n", i+1, ports[3*i], ports[3*i+1], ports[3*i+2])
	}
	fmt.Fprintf(&y, `data_dir: %q
upstream: http://%s
raft: {heartbeat_timeout: 500ms, election_timeout: 500ms}
routes:
  - {name: pay, path: /pay, tenant: "header:X-User-Id", processing_timeout: 5s, on_in_flight: conflict, on_unknown: reject}
  - {name: pay-wait, path: /pay-wait, scope: pay, tenant: "header:X-User-Id", processing_timeout: 5s, on_in_flight: wait, wait_timeout: 3s, on_unknown: reject}
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
	var nodes []*node
	for _, cn := range file.Nodes {
		s := nodeSettings{file: file, node: cn, dataDir: file.DataDirFor(cn.ID)}
		err := s.loadTLS()
		var nd *node
		if err == nil {
			nd, err = startNode(s, quiet, nil)
		}
		if err != nil {
			for _, x := range nodes {
				x.stop(time.Second)
			}
			return nil, nil, err
		}
		nodes = append(nodes, nd)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		ready := 0
		for _, nd := range nodes {
			if nd.store.Ready() {
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

func sumCounter(n *node, name string) float64 {
	families, err := n.reg.Gather()
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
