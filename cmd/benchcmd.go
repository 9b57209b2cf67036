package cmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/idemgate/idemgate/bench"
	"github.com/idemgate/idemgate/internal/democluster"
	"github.com/idemgate/idemgate/node"
)

type benchFlags struct {
	target, api, scenarios string
	redis, etcd            string
	nodes, clients         int
	duration               time.Duration
	requests               int64
	json                   jsonFlag
	cpuprofile             string
	tls                    string
	lock                   bench.LockConfig
	plot, plotScenario     string
	httpClient             string
	breakdown              bool
}

// jsonFlag is --json. Bare (or =true, =-) it prints the JSON report on
// stdout instead of the table, as it always has; with a file (--json FILE
// or --json=FILE) it writes the report there and the table still goes to
// stdout.
type jsonFlag struct {
	stdout bool
	file   string
}

func (j *jsonFlag) IsBoolFlag() bool { return true }

func (j *jsonFlag) Set(s string) error {
	switch s {
	case "true", "-":
		*j = jsonFlag{stdout: true}
	case "false":
		*j = jsonFlag{}
	case "":
		return errors.New("want a file name")
	default:
		*j = jsonFlag{file: s}
	}
	return nil
}

func (j *jsonFlag) String() string {
	if j.stdout {
		return "-"
	}
	return j.file
}

// joinJSONFile turns "--json FILE" into "--json=FILE": a bool-like flag
// takes no separate value, and the bench takes no arguments, so a word
// after --json that is not a flag is its file.
func joinJSONFile(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		if (args[i] == "--json" || args[i] == "-json") && i+1 < len(args) && args[i+1] != "" && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, "--json="+args[i+1])
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

func benchCmd(args []string, stdout, stderr io.Writer) int {
	if soloScenario(args, "scale") {
		return benchScaleCmd(args, stdout, stderr)
	}
	if soloScenario(args, "failover") {
		return benchFailoverCmd(args, stdout, stderr)
	}
	f := benchFlags{lock: bench.DefaultLockConfig()}
	const usage = "idemgate bench [--scenario LIST] [--clients N] [--duration D] [--requests N] [--json [FILE]] [--plot FILE.svg] [--target URLS --api URLS]"
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&f.target, "target", "", "gateway base URLs of a running cluster, comma-separated (default: start one)")
	fs.StringVar(&f.api, "api", "", "API base URLs of that cluster, comma-separated (required with --target)")
	fs.StringVar(&f.scenarios, "scenario", "all", "unique, replay, hotkey, tokens, kv, contention, flashsale, once, resp, comma-separated, or all; or scale or failover alone (see --scenario scale --help, --scenario failover --help)")
	fs.IntVar(&f.nodes, "nodes", 3, "nodes of the cluster the bench starts")
	fs.IntVar(&f.clients, "clients", 64, "concurrent clients")
	fs.DurationVar(&f.duration, "duration", 5*time.Second, "bound on each measurement")
	fs.Int64Var(&f.requests, "requests", 0, "bound on each measurement's operations (0: none)")
	fs.Var(&f.json, "json", "bare: print the JSON report instead of the table; --json FILE: also write it to FILE")
	fs.StringVar(&f.redis, "redis", "auto", "redis-server for the baseline: auto (from PATH), off, or a path")
	fs.StringVar(&f.etcd, "etcd", "auto", "etcd for the baseline: auto (PATH, or build bench/etcd once), off, or a path")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the idemgate scenarios (cluster and clients) to this file")
	fs.StringVar(&f.tls, "tls", "off", "the cluster the bench starts: off (plaintext), on (mutual TLS on Raft, TLS on the API and gateway), or both, one after the other")
	fs.IntVar(&f.lock.Keys, "keys", f.lock.Keys, "contention: hot lock keys")
	fs.Float64Var(&f.lock.ZipfS, "zipf-s", f.lock.ZipfS, "contention: skew of the key picked per cycle (Zipf, > 1)")
	fs.DurationVar(&f.lock.Hold, "hold", 0, "contention: how long a client holds a lock it took (up to 1s)")
	fs.StringVar(&f.plot, "plot", "", "sweep --plot-scenario over 1, 4, 16, 64, 256 clients on every system and draw throughput and p99 to this .svg file")
	fs.StringVar(&f.httpClient, "http-client", "fasthttp", "the HTTP client of every request, to idemgate and the baselines: fasthttp, or std (Go's net/http, kept alive)")
	fs.BoolVar(&f.breakdown, "breakdown", false, "instead of the scenarios: where a write's time goes, stage by stage, and its cost per operation, for SETNX over HTTP, SET NX over RESP and a gateway first request at 1, 16 and 64 clients (--duration each); with --scenario once, for a once pair beside etcd's")
	fs.StringVar(&f.plotScenario, "plot-scenario", "contention", "the scenario --plot sweeps: "+strings.Join(bench.PlotScenarios, ", "))
	if _, code, ok := commandLine(fs, "bench", usage, "", joinJSONFile(args), stdout, stderr); !ok {
		return code
	}
	scenarioSet := false
	fs.Visit(func(fl *flag.Flag) { scenarioSet = scenarioSet || fl.Name == "scenario" })
	scenarios, err := bench.ParseScenarios(f.scenarios)
	if f.plot != "" && !scenarioSet {
		scenarios = nil // --plot alone: only the sweep
	}
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "idemgate bench: --scenario: %v\n", err)
		return 2
	case loadFlagsProblem(f.clients, f.duration) != "":
		fmt.Fprintln(stderr, "idemgate bench: "+loadFlagsProblem(f.clients, f.duration))
		return 2
	case f.requests < 0:
		fmt.Fprintln(stderr, "idemgate bench: --requests: must not be negative")
		return 2
	case f.httpClient != "fasthttp" && f.httpClient != "std":
		fmt.Fprintf(stderr, "idemgate bench: --http-client: %q: want fasthttp or std\n", f.httpClient)
		return 2
	case f.nodes < 1 || f.nodes > 7:
		fmt.Fprintln(stderr, "idemgate bench: --nodes: want 1-7")
		return 2
	case (f.target == "") != (f.api == ""):
		fmt.Fprintln(stderr, "idemgate bench: --target and --api go together")
		return 2
	case f.tls != "off" && f.tls != "on" && f.tls != "both":
		fmt.Fprintf(stderr, "idemgate bench: --tls: %q: want off, on or both\n", f.tls)
		return 2
	case f.tls != "off" && f.target != "":
		fmt.Fprintln(stderr, "idemgate bench: --tls: only for the cluster the bench starts (not with --target)")
		return 2
	case f.plot != "" && strings.ToLower(filepath.Ext(f.plot)) != ".svg":
		fmt.Fprintf(stderr, "idemgate bench: --plot: %q: want a file ending in .svg\n", f.plot)
		return 2
	case !slices.Contains(bench.PlotScenarios, f.plotScenario):
		fmt.Fprintf(stderr, "idemgate bench: --plot-scenario: %q: want one of %s\n", f.plotScenario, strings.Join(bench.PlotScenarios, ", "))
		return 2
	}
	if err := f.lock.Validate(); err != nil {
		fmt.Fprintf(stderr, "idemgate bench: --%v\n", err)
		return 2
	}
	bench.UseStdHTTP(f.httpClient == "std")
	// The output files are created now, so a bad path fails before the run.
	var jsonOut, plotOut *os.File
	for _, o := range []struct {
		name, path string
		file       **os.File
	}{{"--json", f.json.file, &jsonOut}, {"--plot", f.plot, &plotOut}} {
		if o.path == "" {
			continue
		}
		if *o.file, err = os.Create(o.path); err != nil {
			fmt.Fprintf(stderr, "idemgate bench: %s: %v\n", o.name, err)
			return 2
		}
		defer (*o.file).Close()
	}
	flags := map[string]string{}
	fs.VisitAll(func(fl *flag.Flag) { flags[fl.Name] = fl.Value.String() })
	rep, err := runBench(f, scenarios, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "idemgate bench: %v\n", err)
		return 1
	}
	rep.Flags, rep.Date = flags, time.Now().UTC().Format(time.RFC3339)
	if f.json.stdout {
		bench.WriteJSON(stdout, rep)
	} else if len(rep.Results) > 0 {
		fmt.Fprintln(stdout)
		bench.WriteTable(stdout, rep.Results)
	}
	if !f.json.stdout && len(rep.Budgets) > 0 {
		bench.PrintBudgets(stdout, rep.Budgets)
	}
	if jsonOut != nil {
		if err := bench.WriteJSON(jsonOut, rep); err != nil {
			fmt.Fprintf(stderr, "idemgate bench: --json: %v\n", err)
			return 1
		}
	}
	if plotOut != nil {
		if !f.json.stdout {
			fmt.Fprintf(stdout, "\n%s swept over clients:\n", f.plotScenario)
			bench.WriteTable(stdout, rep.Sweep)
		}
		title := fmt.Sprintf("idemgate bench: %s, throughput and p99 against clients", f.plotScenario)
		m := rep.Machine
		subtitle := fmt.Sprintf("%s, GOMAXPROCS=%d, %s, revision %.12s; each point: one run of up to %v; hollow: its check failed",
			rep.Date, m.GOMAXPROCS, m.GoVersion, m.Revision, f.duration)
		if err := bench.WritePlot(plotOut, title, subtitle, rep.Sweep); err != nil {
			fmt.Fprintf(stderr, "idemgate bench: --plot: %v\n", err)
			return 1
		}
	}
	if !bench.AllChecksOK(rep.Results) || !bench.AllChecksOK(rep.Sweep) {
		return 1
	}
	return 0
}

// loadFlagsProblem checks --clients and --duration, which every scenario
// has: "" when they are fine.
func loadFlagsProblem(clients int, d time.Duration) string {
	switch {
	case clients < 1 || clients > 4096:
		return "--clients: want 1-4096"
	case d <= 0 || d > time.Hour:
		return "--duration: want a positive duration up to 1h"
	}
	return ""
}

// onEveryStore are the scenarios that run on idemgate and on each baseline;
// the others run on idemgate only, with the baselines' kv beside them, but
// for resp, which is its own comparison (redis-benchmark on idemgate and on
// redis-server).
var onEveryStore = []string{"contention", "flashsale", "once"}

// needsKV reports whether scenario s is one the baselines' kv stands beside.
func needsKV(s string) bool { return !slices.Contains(onEveryStore, s) && s != "resp" }

func runBench(f benchFlags, scenarios []string, stdout, stderr io.Writer) (bench.Report, error) {
	progress := stderr
	rep := bench.Report{Machine: bench.ThisMachine()}
	if f.plot != "" {
		rep.SweepScenario = f.plotScenario
	}
	cfg := bench.RunConfig{Clients: f.clients, Duration: f.duration, Requests: f.requests, Progress: progress}
	sweep := func(sys bench.System) {
		if f.plot != "" {
			fmt.Fprintf(progress, "bench: %s at %v clients on %s\n", f.plotScenario, bench.SweepClients, sys.System())
			rep.Sweep = append(rep.Sweep, bench.Sweep(sys, f.plotScenario, cfg, f.lock)...)
		}
	}
	// onBaseline runs on a baseline what idemgate ran: its kv beside the
	// idemgate-only scenarios, the scenarios every store runs, the sweep.
	onBaseline := func(sys bench.System) {
		for _, s := range scenarios {
			if slices.Contains(onEveryStore, s) {
				rep.Results = append(rep.Results, bench.RunOn(sys, s, cfg, f.lock)...)
			}
		}
		sweep(sys)
	}
	if f.breakdown {
		return rep, breakdown(f, slices.Equal(scenarios, []string{"once"}), cfg, &rep)
	}
	baselineKV := slices.ContainsFunc(scenarios, needsKV)
	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return rep, err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			return rep, err
		}
		defer pf.Close()
	}
	if f.target != "" {
		t := bench.Target{Gateways: splitList(f.target), APIs: splitList(f.api), PayPath: "/pay", PassPath: "/pay-direct"}
		if err := t.Check(); err != nil {
			return rep, err
		}
		fmt.Fprintln(progress, "bench: against a running cluster; its route /pay is loaded, and exactly-once is checked by the answers only")
		rep.Results = runScenarios(t, cfg, f.lock, scenarios, "")
		sweep(t)
	} else {
		for _, secure := range map[string][]bool{"": {false}, "off": {false}, "on": {true}, "both": {false, true}}[f.tls] {
			err := benchOwnCluster(f, secure, progress, func(t bench.Target, suffix string) {
				rep.Results = append(rep.Results, runScenarios(t, cfg, f.lock, scenarios, suffix)...)
				sweep(t)
			})
			if err != nil {
				return rep, err
			}
		}
	}
	if f.cpuprofile != "" {
		pprof.StopCPUProfile() // the baselines are other processes
	}
	if bin, why := bench.FindRedis(f.redis); bin == "" {
		rep.Results = append(rep.Results, bench.Stats{Name: "redis (baseline)", Skipped: why})
	} else if r, err := bench.StartRedis(bin); err != nil {
		rep.Results = append(rep.Results, bench.Stats{Name: "redis (baseline)", Skipped: err.Error()})
	} else {
		if baselineKV {
			rep.Results = append(rep.Results, bench.RunOn(r, "kv", cfg, f.lock)...)
		}
		if slices.Contains(scenarios, "resp") {
			rep.Results = append(rep.Results, respOn("redis", []string{r.Addr()}, cfg)...)
		}
		onBaseline(r)
		r.Stop()
	}
	if bin, why := bench.FindEtcd(f.etcd, progress); bin == "" {
		rep.Results = append(rep.Results, bench.Stats{Name: "etcd (baseline)", Skipped: why})
	} else if e, err := bench.StartEtcd(bin, 3); err != nil {
		rep.Results = append(rep.Results, bench.Stats{Name: "etcd (baseline)", Skipped: err.Error()})
	} else {
		if baselineKV {
			e.ClientLoad, e.ClientLoadSkipped = bench.FindEtcdClientLoad(progress)
			rep.Results = append(rep.Results, bench.RunOn(e, "kv", cfg, f.lock)...)
		}
		onBaseline(e)
		e.Stop()
	}
	return rep, nil
}

// benchOwnCluster starts a cluster (with TLS when secure) in front of a
// trivial upstream, hands it to use with the suffix that marks its
// results, and stops it.
func benchOwnCluster(f benchFlags, secure bool, progress io.Writer, use func(t bench.Target, suffix string)) error {
	dir, err := os.MkdirTemp("", "idemgate-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pay := bench.NewPayments()
	pay.Work, pay.SlowEvery = 0, 0 // a trivial upstream: the bench measures idemgate
	if err := pay.Start(); err != nil {
		return err
	}
	defer pay.Stop()
	node.PaceCollector() // the nodes run as serve runs them (its clients share the pace)
	nodes, file, err := democluster.Start(dir, f.nodes, pay.Addr(), secure)
	if err != nil {
		return err
	}
	defer func() {
		for _, n := range nodes {
			n.Stop(2 * time.Second)
		}
	}()
	t := bench.Target{PayPath: "/pay", PassPath: "/pay-direct", Executions: pay.Executions}
	scheme, suffix, security := "http://", "", "plaintext"
	if secure {
		pem, err := os.ReadFile(file.Path(file.TLS.CA, ""))
		if err != nil {
			return err
		}
		if err := bench.TrustCA(pem); err != nil {
			return err
		}
		scheme, suffix, security = "https://", " [tls]", "mutual TLS on Raft, TLS on the API and gateway"
		t.Name = "idemgate [tls]"
	}
	for i, n := range file.Nodes {
		t.Gateways = append(t.Gateways, scheme+n.Listen)
		t.APIs = append(t.APIs, scheme+n.API)
		if n.Resp != "" && nodes[i].Store.IsLeader() {
			t.Resps = append([]string{n.Resp}, t.Resps...) // redis-benchmark loads the leader: one node, as it loads one redis-server
		} else if n.Resp != "" {
			t.Resps = append(t.Resps, n.Resp)
		}
	}
	fmt.Fprintf(progress, "bench: a %d-node cluster on loopback in %s (%s), a trivial upstream on %s\n", f.nodes, dir, security, pay.Addr())
	use(t, suffix)
	return nil
}

// runScenarios runs the scenarios on t, with the pass-through baseline
// first when a gateway scenario is among them; suffix marks the results'
// names.
func runScenarios(t bench.Target, cfg bench.RunConfig, lc bench.LockConfig, scenarios []string, suffix string) []bench.Stats {
	var results []bench.Stats
	add := func(scenario string, st ...bench.Stats) {
		results = append(results, bench.Tag(st, t.System(), scenario)...)
	}
	if slices.ContainsFunc(scenarios, needsKV) {
		add("passthrough", bench.Passthrough(t, cfg))
	}
	for _, s := range scenarios {
		switch s {
		case "unique":
			add(s, bench.Unique(t, cfg))
		case "replay":
			add(s, bench.Replay(t, cfg))
		case "hotkey":
			add(s, bench.HotKey(t, cfg))
		case "tokens":
			add(s, bench.Tokens(t, cfg))
		case "kv", "contention", "flashsale", "once":
			add(s, bench.RunOn(t, s, cfg, lc)...)
		case "resp":
			results = append(results, respOn(t.System(), t.Resps, cfg)...)
		}
	}
	for i := range results {
		results[i].Name += suffix
	}
	return results
}

// respOn runs the resp scenario against the first of addrs (a node's
// Redis-protocol listener, or redis-server), or says why it cannot.
func respOn(system string, addrs []string, cfg bench.RunConfig) []bench.Stats {
	bin, why := bench.FindRedisBenchmark()
	if bin == "" || len(addrs) == 0 {
		if why == "" {
			why = "the cluster has no Redis-protocol listener (nodes[].resp)"
		}
		return []bench.Stats{{Name: "resp (" + system + ")", Skipped: why, System: system, Scenario: "resp"}}
	}
	return bench.RespBench(bin, system, addrs[0], cfg)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(strings.TrimRight(p, "/")); p != "" {
			if !strings.Contains(p, "://") {
				p = "http://" + p
			}
			out = append(out, p)
		}
	}
	return out
}

// breakdown runs --breakdown: the write budget on a cluster the bench
// starts, then the same writes' cost on each baseline found; with once
// (--scenario once), the once pair's, beside etcd's.
func breakdown(f benchFlags, once bool, cfg bench.RunConfig, rep *bench.Report) error {
	err := benchOwnCluster(f, false, cfg.Progress, func(t bench.Target, _ string) {
		if once {
			rep.Budgets = bench.BreakdownOnce(t, cfg, bench.BudgetClients)
		} else {
			rep.Budgets = bench.Breakdown(t, cfg, bench.BudgetClients)
		}
	})
	if err != nil {
		return err
	}
	if once {
		if bin, why := bench.FindEtcd(f.etcd, cfg.Progress); bin == "" {
			fmt.Fprintf(cfg.Progress, "bench: no etcd baseline: %s\n", why)
		} else if e, err := bench.StartEtcd(bin, 3); err != nil {
			fmt.Fprintf(cfg.Progress, "bench: no etcd baseline: %v\n", err)
		} else {
			defer e.Stop()
			rep.Budgets = append(rep.Budgets, bench.BaselineOnceBreakdown(e, cfg, bench.BudgetClients)...)
		}
		return nil
	}
	var r *bench.Redis
	if bin, why := bench.FindRedis(f.redis); bin == "" {
		fmt.Fprintf(cfg.Progress, "bench: no redis baseline: %s\n", why)
	} else if r, err = bench.StartRedis(bin); err != nil {
		fmt.Fprintf(cfg.Progress, "bench: no redis baseline: %v\n", err)
	} else {
		defer r.Stop()
	}
	var e *bench.Etcd
	if bin, why := bench.FindEtcd(f.etcd, cfg.Progress); bin == "" {
		fmt.Fprintf(cfg.Progress, "bench: no etcd baseline: %s\n", why)
	} else if e, err = bench.StartEtcd(bin, 3); err != nil {
		fmt.Fprintf(cfg.Progress, "bench: no etcd baseline: %v\n", err)
	} else {
		defer e.Stop()
	}
	rep.Budgets = append(rep.Budgets, bench.BaselineBreakdown(r, e, cfg, bench.BudgetClients)...)
	return nil
}
