package cmd

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/idemgate/idemgate/bench"
	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/internal/democluster"
	"github.com/idemgate/idemgate/node"
	"github.com/idemgate/idemgate/reconcile"
)

type demoFlags struct {
	users, nodes, concurrency int
	noKill, without           bool
	reconcile                 bool
}

func demoCmd(args []string, stdout, stderr io.Writer) int {
	var f demoFlags
	const usage = "idemgate demo [--users N] [--nodes N] [--no-kill] [--without-idemgate] [--reconcile]"
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.IntVar(&f.users, "users", 3700, "users who each pay once (clicking two or three times)")
	fs.IntVar(&f.nodes, "nodes", 3, "cluster nodes (1-7)")
	fs.IntVar(&f.concurrency, "concurrency", 128, "users clicking at the same moment")
	fs.BoolVar(&f.noKill, "no-kill", false, "do not kill the leader partway through")
	fs.BoolVar(&f.without, "without-idemgate", false, "also send the same clicks straight to the payment service, side by side")
	fs.BoolVar(&f.reconcile, "reconcile", false, "then hold the records export against the payment service's statement, as idemgate reconcile does")
	if _, code, ok := commandLine(fs, "demo", usage, "", args, stdout, stderr); !ok {
		return code
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
	pay.Ledger = f.reconcile
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

	node.PaceCollector() // the nodes run as serve runs them
	nodes, file, err := democluster.Start(dir, f.nodes, pay.Addr(), false)
	if err != nil {
		return false, err
	}
	defer func() {
		for _, n := range nodes {
			if n != nil {
				n.Stop(2 * time.Second)
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
				if n != nil && n.Store.IsLeader() {
					nodes[i] = nil
					n.Kill()
					return n.ID
				}
			}
			return ""
		}
	}
	began := time.Now()
	res, err := bench.RunIncident(withIdem)
	if err != nil {
		return false, err
	}
	pay.Quiesce(5 * time.Second)
	var rep *reconcile.Report
	if f.reconcile {
		if rep, err = demoReconcile(dir, nodes, file, pay, began); err != nil {
			return false, err
		}
	}
	col := bench.IncidentColumn{Title: "with idemgate", Res: res, Charges: pay.Charges(), Gateway: true}
	for _, n := range nodes {
		if n != nil {
			col.Waits += democluster.SumCounter(n, "idemgate_in_flight_waits_total")
		}
	}
	cols = append(cols, col)
	fmt.Fprintln(out)
	ok := bench.WriteIncidentTable(out, f.users, cols)
	if rep != nil {
		fmt.Fprintln(out, "\nthe next morning, the records export held against the payment service's statement:")
		rep.Print(out)
	}
	return ok, nil
}

// demoReconcile runs the daily reconciliation over the run with idemgate:
// the export from a live node's API (GET /v1/records/export), the payment
// service's statement, and what idemgate reconcile finds in them.
func demoReconcile(dir string, nodes []*node.Node, file *config.File, pay *bench.Payments, began time.Time) (*reconcile.Report, error) {
	api := ""
	for i, n := range nodes {
		if n != nil {
			api = file.Nodes[i].API
			break
		}
	}
	u := "http://" + api + "/v1/records/export?scope=pay&since=" + url.QueryEscape(began.Add(-time.Second).UTC().Format(time.RFC3339Nano)) +
		"&until=" + url.QueryEscape(time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano))
	resp, err := http.Get(u)
	if err != nil {
		return nil, fmt.Errorf("records export: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("records export: %s", resp.Status)
	}
	exportPath, ledgerPath := filepath.Join(dir, "export.ndjson"), filepath.Join(dir, "statement.csv")
	ef, err := os.Create(exportPath)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(ef, resp.Body)
	if cerr := ef.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("records export: %w", err)
	}
	var st bytes.Buffer
	if err := pay.Statement(&st); err != nil {
		return nil, err
	}
	if err := os.WriteFile(ledgerPath, st.Bytes(), 0o600); err != nil {
		return nil, err
	}
	rep, err := reconcile.Run(reconcile.Config{Export: exportPath, Ledger: ledgerPath, LedgerKey: "idempotency_key", LedgerID: "charge_id",
		Window: config.DefaultSuspectWindow})
	if err != nil {
		return nil, err
	}
	return &rep, nil
}
