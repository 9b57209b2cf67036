package cmd

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/bench"
	"github.com/idemgate/idemgate/raftstore"
)

// TestBenchShort runs every scenario briefly against a cluster the bench
// starts, without the external baselines: each exactly-once check passes.
func TestBenchShort(t *testing.T) {
	var out, progress bytes.Buffer
	f := benchFlags{nodes: 3, clients: 8, duration: 500 * time.Millisecond, requests: 300, redis: "off", etcd: "off", lock: bench.DefaultLockConfig()}
	rep, err := runBench(f, bench.Scenarios, &out, &progress)
	if err != nil {
		t.Fatal(err)
	}
	results := rep.Results
	names := map[string]bool{}
	for _, r := range results {
		names[r.Name] = true
		if r.Skipped != "" {
			if strings.Contains(r.Name, "baseline") {
				continue
			}
			t.Fatalf("%s skipped: %s", r.Name, r.Skipped)
		}
		if r.Errors != 0 || r.Ops == 0 {
			t.Fatalf("%s: %d ops, %d errors (%s)", r.Name, r.Ops, r.Errors, r.FirstError)
		}
		if r.Check != "" && !r.CheckOK {
			t.Fatalf("%s: check failed: %s", r.Name, r.Check)
		}
	}
	for _, want := range []string{"passthrough (baseline)", "unique (first requests)", "replay (completed keys)",
		"hotkey (one key)", "tokens (consume)", "kv SETNX", "kv GETDEL", "contention", "flashsale", "once (begin+complete)", "once over RESP (begin+complete)"} {
		if !names[want] {
			t.Fatalf("no result for %s", want)
		}
	}
	for _, r := range results {
		switch {
		case r.Lock != nil && (r.Lock.Acquisitions == 0 || r.Lock.Violations != 0 || !r.Lock.Fencing):
			t.Fatalf("contention: %+v: %s", r.Lock, r.Check)
		case r.Sale != nil && (r.Sale.Won != bench.SaleTokens || r.Sale.Unsold != 0 || r.Sale.Contended == 0):
			t.Fatalf("flashsale: %+v: %s", r.Sale, r.Check)
		}
	}
	var table bytes.Buffer
	bench.WriteTable(&table, results)
	if !strings.Contains(table.String(), "ok: 1 upstream executions of the hot key") {
		t.Fatalf("table:\n%s", table.String())
	}
}

// TestBenchTLS runs first requests and SETNX on a cluster with TLS
// everywhere (mutual on Raft): the checks pass and the results are marked.
func TestBenchTLS(t *testing.T) {
	var out, progress bytes.Buffer
	f := benchFlags{nodes: 3, clients: 8, duration: 500 * time.Millisecond, requests: 200, redis: "off", etcd: "off", tls: "on"}
	rep, err := runBench(f, []string{"unique", "kv"}, &out, &progress)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Skipped != "" {
			continue
		}
		if !strings.HasSuffix(r.Name, " [tls]") || r.Errors != 0 || r.Ops == 0 || (r.Check != "" && !r.CheckOK) {
			t.Fatalf("%s: %d ops, %d errors (%s), check %q", r.Name, r.Ops, r.Errors, r.FirstError, r.Check)
		}
	}
	if !strings.Contains(progress.String(), "mutual TLS on Raft") {
		t.Fatalf("progress does not say the cluster is secured:\n%s", progress.String())
	}
}

func TestBenchFlags(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "no", "such", "dir", "r.json")
	for _, tt := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--scenario", "nope"}, 2, "--scenario"},
		{[]string{"--scenario", "contention,nope"}, 2, "--scenario"},
		{[]string{"--clients", "0"}, 2, "--clients"},
		{[]string{"--target", "http://127.0.0.1:1"}, 2, "--target"},
		{[]string{"--duration", "-1s"}, 2, "--duration"},
		{[]string{"--target", "http://10.0.0.1:80", "--api", "http://10.0.0.1:81"}, 1, "loopback"},
		{[]string{"--tls", "maybe"}, 2, "--tls"},
		{[]string{"--tls", "on", "--target", "http://127.0.0.1:1", "--api", "http://127.0.0.1:2"}, 2, "--tls"},
		{[]string{"--keys", "0"}, 2, "--keys"},
		{[]string{"--keys", "-3"}, 2, "--keys"},
		{[]string{"--keys", "many"}, 2, "-keys"},
		{[]string{"--zipf-s", "1"}, 2, "--zipf-s"},
		{[]string{"--zipf-s", "0.9"}, 2, "--zipf-s"},
		{[]string{"--zipf-s", "NaN"}, 2, "--zipf-s"},
		{[]string{"--hold", "5s"}, 2, "--hold"},
		{[]string{"--plot", "out.png"}, 2, "--plot"},
		{[]string{"--plot", "out"}, 2, "--plot"},
		{[]string{"--plot-scenario", "unique"}, 2, "--plot-scenario"},
		{[]string{"--http-client", "curl"}, 2, "--http-client"},
		{[]string{"--json", bad}, 2, "--json"},
		{[]string{"--json", "r.json", "extra"}, 2, "unexpected argument"},
	} {
		var stdout, stderr bytes.Buffer
		code := benchCmd(tt.args, &stdout, &stderr)
		if code != tt.code || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), tt.says) {
			t.Errorf("bench %v = exit %d, stderr %q; want exit %d, one line naming %s", tt.args, code, stderr.String(), tt.code, tt.says)
		}
	}
}

func TestJoinJSONFile(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"--json", "--json"},
		{"--json --clients 4", "--json --clients 4"},
		{"--json r.json --clients 4", "--json=r.json --clients 4"},
		{"-json r.json", "--json=r.json"},
		{"--json=r.json", "--json=r.json"},
		{"--clients 4 --json", "--clients 4 --json"},
	} {
		if got := strings.Join(joinJSONFile(strings.Fields(tt.in)), " "); got != tt.want {
			t.Errorf("joinJSONFile(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestBenchPlotAndJSON runs --plot (the contention sweep, idemgate only)
// with --json FILE through the command: the SVG parses and has a series
// with every client count in both panels, and the JSON report says what
// ran, on what.
func TestBenchPlotAndJSON(t *testing.T) {
	dir := t.TempDir()
	svgPath, jsonPath := filepath.Join(dir, "p.svg"), filepath.Join(dir, "r.json")
	var stdout, stderr bytes.Buffer
	code := benchCmd([]string{"--plot", svgPath, "--json", jsonPath, "--duration", "300ms", "--requests", "40",
		"--keys", "4", "--redis", "off", "--etcd", "off"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	svg, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	var points int
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not XML: %v", err)
		}
		if el, ok := tok.(xml.StartElement); ok && el.Name.Local == "circle" {
			for _, a := range el.Attr {
				if a.Name.Local == "data-system" && a.Value == "idemgate" {
					points++
				}
			}
		}
	}
	if points != 2*len(bench.SweepClients) {
		t.Fatalf("%d idemgate points in the SVG, want %d", points, 2*len(bench.SweepClients))
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Machine.GOMAXPROCS < 1 || rep.Machine.GoVersion == "" || rep.Date == "" || rep.Flags["plot"] != svgPath ||
		rep.Flags["zipf-s"] != "1.1" || rep.SweepScenario != "contention" || len(rep.Sweep) != len(bench.SweepClients) {
		t.Fatalf("report: %s", raw)
	}
	for _, r := range rep.Results {
		if r.Skipped == "" { // --plot alone runs the sweep only: the baselines say they are off
			t.Fatalf("a result besides the sweep: %+v", r)
		}
	}
	for _, s := range rep.Sweep {
		if s.System != "idemgate" || s.Scenario != "contention" || s.Lock == nil || s.Lock.Violations != 0 || s.Ops == 0 {
			t.Fatalf("sweep point: %+v", s)
		}
	}
}

// TestBenchStdHTTPClient: with --http-client std every request goes through
// Go's net/http client, and the scenarios' checks still hold.
func TestBenchStdHTTPClient(t *testing.T) {
	bench.UseStdHTTP(true)
	defer bench.UseStdHTTP(false)
	var out, progress bytes.Buffer
	f := benchFlags{nodes: 3, clients: 8, duration: 500 * time.Millisecond, requests: 300, redis: "off", etcd: "off",
		lock: bench.DefaultLockConfig(), httpClient: "std"}
	before := bench.StdRequests()
	rep, err := runBench(f, []string{"unique", "kv"}, &out, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if n := bench.StdRequests() - before; n < 300 {
		t.Fatalf("only %d requests went through net/http", n)
	}
	for _, r := range rep.Results {
		if r.Skipped == "" && (r.Errors != 0 || r.Ops == 0 || (r.Check != "" && !r.CheckOK)) {
			t.Fatalf("%s over net/http: %d ops, %d errors (%s), check %q", r.Name, r.Ops, r.Errors, r.FirstError, r.Check)
		}
	}
}

// TestBenchScaleFlags: the scale scenario's own flags, each bad value one
// line naming the flag, before anything is started.
func TestBenchScaleFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"--scenario", "scale", "--keys", "0"}, "--keys"},
		{[]string{"--scenario=scale", "--keys", "1000000000"}, "--keys"},
		{[]string{"--scenario", "scale", "--keys", "ten"}, "-keys"},
		{[]string{"--scenario", "scale", "--clients", "0"}, "--clients"},
		{[]string{"--scenario", "scale", "--duration", "0s"}, "--duration"},
		{[]string{"--scenario", "scale", "--due-keys", "-1"}, "--due-keys"},
		{[]string{"--scenario", "scale", "--keep"}, "--keep"},
		{[]string{"--scenario", "scale", "--target", "http://127.0.0.1:1"}, "-target"},
		{[]string{"--scenario", "scale", "extra"}, "unexpected argument"},
		{[]string{"--scenario", "scale", "--json", filepath.Join(t.TempDir(), "no", "r.json")}, "--json"},
	} {
		var stdout, stderr bytes.Buffer
		code := benchCmd(tt.args, &stdout, &stderr)
		if code != 2 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), tt.says) {
			t.Errorf("bench %v = exit %d, stderr %q; want exit 2, one line naming %s", tt.args, code, stderr.String(), tt.says)
		}
	}
}

// TestBenchFailoverFlags: the failover scenario's own flags, each bad
// value one line naming the flag, before anything is started.
func TestBenchFailoverFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"--scenario", "failover", "--kills", "0"}, "--kills"},
		{[]string{"--scenario=failover", "--kills", "1001"}, "--kills"},
		{[]string{"--scenario", "failover", "--kills", "ten"}, "-kills"},
		{[]string{"--scenario", "failover", "--load", "-1s"}, "--load"},
		{[]string{"--scenario", "failover", "--load", "2h"}, "--load"},
		{[]string{"--scenario", "failover", "--clients", "0"}, "--clients"},
		{[]string{"--scenario", "failover", "--keep"}, "--keep"},
		{[]string{"--scenario", "failover", "--profiles", "wan"}, `--profiles: "wan": want default, lan or NAME=HEARTBEAT/ELECTION`},
		{[]string{"--scenario", "failover", "--profiles", "x=300ms"}, "want NAME=HEARTBEAT/ELECTION"},
		{[]string{"--scenario", "failover", "--profiles", "x=300ms/soon"}, "want NAME=HEARTBEAT/ELECTION"},
		{[]string{"--scenario", "failover", "--profiles", "=300ms/300ms"}, "want NAME=HEARTBEAT/ELECTION"},
		{[]string{"--scenario", "failover", "--profiles", "x=1ms/300ms"}, "timeouts from 10ms to 1m"},
		{[]string{"--scenario", "failover", "--profiles", "x=300ms/2h"}, "timeouts from 10ms to 1m"},
		{[]string{"--scenario", "failover", "--profiles", "lan,lan"}, `"lan" named twice`},
		{[]string{"--scenario", "failover", "--profiles", ""}, "--profiles"},
		{[]string{"--scenario", "failover", "--target", "http://127.0.0.1:1"}, "-target"},
		{[]string{"--scenario", "failover", "extra"}, "unexpected argument"},
		{[]string{"--scenario", "failover", "--json", filepath.Join(t.TempDir(), "no", "r.json")}, "--json"},
	} {
		var stdout, stderr bytes.Buffer
		code := benchCmd(tt.args, &stdout, &stderr)
		if code != 2 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), tt.says) {
			t.Errorf("bench %v = exit %d, stderr %q; want exit 2, one line naming %s", tt.args, code, stderr.String(), tt.says)
		}
	}
	// The profiles it knows and the ones given.
	got, err := parseFailoverProfiles("default, lan,wan=2s/2s")
	if err != nil || len(got) != 3 || got[0].Heartbeat != time.Second || got[0].Election != time.Second ||
		got[1].Heartbeat != raftstore.LANHeartbeatTimeout || got[2] != (bench.FailoverProfile{Name: "wan", Heartbeat: 2 * time.Second, Election: 2 * time.Second}) {
		t.Errorf("profiles %+v, %v", got, err)
	}
}

// TestBenchBreakdown: --breakdown runs every workload at each client
// count on a real cluster and reports each: a workload that failed its
// writes (a busy machine may time out even the one write of a short run)
// with its error count and first error, one that measured with a budget
// that adds up: the Raft stages of a write were seen (a Raft entry, a
// leader log write, AppendEntries, a commit) and every command of an
// operation was queued and woken. With --scenario once, the same for the
// once pair's two store calls. It holds what the bench measures, never
// how fast.
func TestBenchBreakdown(t *testing.T) {
	for _, once := range []bool{false, true} {
		t.Run(map[bool]string{false: "writes", true: "once"}[once], func(t *testing.T) { testBreakdown(t, once) })
	}
}

// busy matches the errors a busy machine gives a write: the store's or
// the client's timeout, no leader yet, a node too loaded to answer. Any
// other error is the bench's or the cluster's fault, load or not.
var busy = regexp.MustCompile(`timeout|timed out|deadline exceeded|no leader|unavailable|status 50[234]`)

func testBreakdown(t *testing.T, once bool) {
	var out, progress bytes.Buffer
	f := benchFlags{nodes: 3, duration: 300 * time.Millisecond, redis: "off", etcd: "off", breakdown: true, lock: bench.DefaultLockConfig()}
	cfg := bench.RunConfig{Duration: f.duration, Progress: &progress}
	var rep bench.Report
	if err := breakdown(f, once, cfg, &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	workloads := []string{"SETNX over HTTP", "SET NX over RESP", "gateway first request"}
	if once {
		workloads = []string{"once pair over HTTP", "once pair over RESP"}
	}
	for _, w := range workloads {
		for _, n := range bench.BudgetClients {
			want[fmt.Sprintf("%s/%d", w, n)] = true
		}
	}
	stage := func(b bench.Budget, name string) bench.StageStat {
		for _, s := range b.Stages {
			if strings.TrimSpace(s.Stage) == name {
				return s
			}
		}
		t.Fatalf("%s: no stage %q", b.Name, name)
		return bench.StageStat{}
	}
	measured := 0
	for _, b := range rep.Budgets {
		delete(want, fmt.Sprintf("%s/%d", b.Name, b.Clients))
		// A loaded machine may time a write out (ERR timeout, the
		// command may or may not have been applied), even the one write
		// of a short run: the bench counts it and reports the first
		// error, and that is what is held here, never that a busy
		// machine commits within the run.
		if (b.Errors > 0 || b.Ops == 0) && !busy.MatchString(b.Err) {
			t.Errorf("%s at %d clients: %d ops, %d errors (%q): want each error reported, and one a busy machine gives", b.Name, b.Clients, b.Ops, b.Errors, b.Err)
		}
		if b.Ops == 0 {
			t.Logf("%s at %d clients: no op completed: %d errors (%s)", b.Name, b.Clients, b.Errors, b.Err)
			continue
		}
		measured++
		calls := 1.0
		if b.Name == "gateway first request" || strings.HasPrefix(b.Name, "once pair") {
			calls = 2 // begin and complete
		}
		// Every store call of an operation that completed was queued and
		// woken: at least one sample each. More are no fault: the
		// cluster's own writes (its id, expiry sweeps) run beside the
		// workload's, a failed operation may have gone as far as any
		// stage, and a call retried (a leader lost on a busy machine)
		// samples again.
		for _, name := range []string{"wait for the batch in flight (group commit)", "answer → caller running"} {
			if s := stage(b, name); s.Count < int64(calls)*b.Ops {
				t.Errorf("%s at %d clients: %q %d samples for %d ops, want at least %.0f each", b.Name, b.Clients, name, s.Count, b.Ops, calls)
			}
		}
		if raft := stage(b, "Raft: batch hand-off → answer"); raft.Count <= 0 {
			t.Errorf("%s at %d clients: no Raft entry for %d ops", b.Name, b.Clients, b.Ops)
		}
		// Seen, not counted per entry: a follower that falls behind (as
		// on a busy machine) takes several entries in one AppendEntries
		// and stores them in one raft.db commit.
		for _, name := range []string{"leader log write + fsync", "dispatch → commit (quorum)", "AppendEntries round trip"} {
			if s := stage(b, name); s.Count == 0 || s.Mean <= 0 {
				t.Errorf("%s at %d clients: stage %q unseen: %+v", b.Name, b.Clients, name, s)
			}
		}
		if b.LogCommitsPerOp <= 0 || b.CPUPerOp <= 0 || b.AllocsPerOp <= 0 {
			t.Errorf("%s at %d clients: %f log commits, CPU %v, %f allocations per op", b.Name, b.Clients, b.LogCommitsPerOp, b.CPUPerOp, b.AllocsPerOp)
		}
	}
	if len(want) > 0 {
		t.Errorf("budgets missing: %v", want)
	}
	// Every workload printed, with its errors when it had any, and the
	// stages of those that measured.
	bench.PrintBudgets(&out, rep.Budgets)
	for _, b := range rep.Budgets {
		lines := []string{fmt.Sprintf("\n%s, %d clients: ", b.Name, b.Clients)}
		if b.Errors > 0 {
			lines = append(lines, fmt.Sprintf(", %d errors (%s)", b.Errors, b.Err))
		}
		for _, line := range lines {
			if !strings.Contains(out.String(), line) {
				t.Errorf("the printed budget lacks %q:\n%s", line, out.String())
			}
		}
	}
	if measured > 0 && !strings.Contains(out.String(), "leader log write + fsync") {
		t.Errorf("the printed budget lacks its stages:\n%s", out.String())
	}
}
