package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/idemgate/idemgate/bench"
	"github.com/idemgate/idemgate/node"
)

type benchFlags struct {
	target, api, scenarios string
	redis, etcd            string
	nodes, clients         int
	duration               time.Duration
	requests               int64
	json                   bool
	cpuprofile             string
	tls                    string
}

func benchCmd(args []string, stdout, stderr io.Writer) int {
	var f benchFlags
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.target, "target", "", "gateway base URLs of a running cluster, comma-separated (default: start one)")
	fs.StringVar(&f.api, "api", "", "API base URLs of that cluster, comma-separated (required with --target)")
	fs.StringVar(&f.scenarios, "scenario", "all", "unique, replay, hotkey, tokens, kv, comma-separated, or all")
	fs.IntVar(&f.nodes, "nodes", 3, "nodes of the cluster the bench starts")
	fs.IntVar(&f.clients, "clients", 64, "concurrent clients")
	fs.DurationVar(&f.duration, "duration", 5*time.Second, "bound on each measurement")
	fs.Int64Var(&f.requests, "requests", 0, "bound on each measurement's operations (0: none)")
	fs.BoolVar(&f.json, "json", false, "print JSON instead of a table")
	fs.StringVar(&f.redis, "redis", "auto", "redis-server for the baseline: auto (from PATH), off, or a path")
	fs.StringVar(&f.etcd, "etcd", "auto", "etcd for the baseline: auto (PATH, or build bench/etcd once), off, or a path")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the idemgate scenarios (cluster and clients) to this file")
	fs.StringVar(&f.tls, "tls", "off", "the cluster the bench starts: off (plaintext), on (mutual TLS on Raft, TLS on the API and gateway), or both, one after the other")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: idemgate bench [--scenario LIST] [--clients N] [--duration D] [--requests N] [--json] [--target URLS --api URLS]")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "idemgate bench: %v\n", err)
		return 2
	}
	scenarios, err := bench.ParseScenarios(f.scenarios)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "idemgate bench: --scenario: %v\n", err)
		return 2
	case f.clients < 1 || f.clients > 4096:
		fmt.Fprintln(stderr, "idemgate bench: --clients: want 1-4096")
		return 2
	case f.duration <= 0 || f.duration > time.Hour:
		fmt.Fprintln(stderr, "idemgate bench: --duration: want a positive duration up to 1h")
		return 2
	case f.requests < 0:
		fmt.Fprintln(stderr, "idemgate bench: --requests: must not be negative")
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
	}
	results, err := runBench(f, scenarios, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "idemgate bench: %v\n", err)
		return 1
	}
	if f.json {
		bench.WriteJSON(stdout, results)
	} else {
		fmt.Fprintln(stdout)
		bench.WriteTable(stdout, results)
	}
	if !bench.AllChecksOK(results) {
		return 1
	}
	return 0
}

func runBench(f benchFlags, scenarios []string, stdout, stderr io.Writer) ([]bench.Stats, error) {
	progress := stderr
	cfg := bench.RunConfig{Clients: f.clients, Duration: f.duration, Requests: f.requests, Progress: progress}
	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			return nil, err
		}
		defer pf.Close()
	}
	var results []bench.Stats
	if f.target != "" {
		t := bench.Target{Gateways: splitList(f.target), APIs: splitList(f.api), PayPath: "/pay", PassPath: "/pay-direct"}
		if err := t.Check(); err != nil {
			return nil, err
		}
		fmt.Fprintln(progress, "bench: against a running cluster; its route /pay is loaded, and exactly-once is checked by the answers only")
		results = runScenarios(t, cfg, scenarios, "")
	} else {
		for _, secure := range map[string][]bool{"": {false}, "off": {false}, "on": {true}, "both": {false, true}}[f.tls] {
			r, err := benchOwnCluster(f, secure, cfg, scenarios, progress)
			if err != nil {
				return nil, err
			}
			results = append(results, r...)
		}
	}
	if f.cpuprofile != "" {
		pprof.StopCPUProfile() // the baselines are other processes
	}
	if bin, why := bench.FindRedis(f.redis); bin == "" {
		results = append(results, bench.Stats{Name: "redis (baseline)", Skipped: why})
	} else if r, err := bench.StartRedis(bin); err != nil {
		results = append(results, bench.Stats{Name: "redis (baseline)", Skipped: err.Error()})
	} else {
		results = append(results, bench.RedisKV(r, cfg)...)
		r.Stop()
	}
	if bin, why := bench.FindEtcd(f.etcd, progress); bin == "" {
		results = append(results, bench.Stats{Name: "etcd (baseline)", Skipped: why})
	} else if e, err := bench.StartEtcd(bin, 3); err != nil {
		results = append(results, bench.Stats{Name: "etcd (baseline)", Skipped: err.Error()})
	} else {
		results = append(results, bench.EtcdKV(e, cfg)...)
		e.Stop()
	}
	return results, nil
}

// benchOwnCluster starts a cluster (with TLS when secure) in front of a
// trivial upstream, runs the scenarios on it and stops it.
func benchOwnCluster(f benchFlags, secure bool, cfg bench.RunConfig, scenarios []string, progress io.Writer) ([]bench.Stats, error) {
	dir, err := os.MkdirTemp("", "idemgate-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	pay := bench.NewPayments()
	pay.Work, pay.SlowEvery = 0, 0 // a trivial upstream: the bench measures idemgate
	if err := pay.Start(); err != nil {
		return nil, err
	}
	defer pay.Stop()
	nodes, file, err := node.StartLocal(dir, f.nodes, pay.Addr(), secure)
	if err != nil {
		return nil, err
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
			return nil, err
		}
		if err := bench.TrustCA(pem); err != nil {
			return nil, err
		}
		scheme, suffix, security = "https://", " [tls]", "mutual TLS on Raft, TLS on the API and gateway"
	}
	for _, n := range file.Nodes {
		t.Gateways = append(t.Gateways, scheme+n.Listen)
		t.APIs = append(t.APIs, scheme+n.API)
	}
	fmt.Fprintf(progress, "bench: a %d-node cluster on loopback in %s (%s), a trivial upstream on %s\n", f.nodes, dir, security, pay.Addr())
	return runScenarios(t, cfg, scenarios, suffix), nil
}

// runScenarios runs the pass-through baseline and the scenarios on t;
// suffix marks the results' names.
func runScenarios(t bench.Target, cfg bench.RunConfig, scenarios []string, suffix string) []bench.Stats {
	results := []bench.Stats{bench.Passthrough(t, cfg)}
	for _, s := range scenarios {
		switch s {
		case "unique":
			results = append(results, bench.Unique(t, cfg))
		case "replay":
			results = append(results, bench.Replay(t, cfg))
		case "hotkey":
			results = append(results, bench.HotKey(t, cfg))
		case "tokens":
			results = append(results, bench.Tokens(t, cfg))
		case "kv":
			results = append(results, bench.KV(t, cfg)...)
		}
	}
	for i := range results {
		results[i].Name += suffix
	}
	return results
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
