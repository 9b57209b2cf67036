package e2e

// The deploy files (deploy/alerts.yaml, deploy/systemd/idemgate.service)
// kept true: every metric an alert names is one a node registers, every
// docs/ section a runbook names exists, and the unit is one systemd accepts.

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/idemgate/idemgate/internal/democluster"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// alertRules is the part of a Prometheus rule file the checks read.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

var (
	metricName      = regexp.MustCompile(`\bidemgate_[a-z0-9_]+`)
	promDuration    = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)
	descName        = regexp.MustCompile(`fqName: "([^"]+)"`)
	histogramSuffix = regexp.MustCompile(`_(bucket|sum|count)$`)
)

// alertMetrics reads the rule file: every rule complete, and the idemgate_
// metric names the expressions use.
func alertMetrics(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rules alertRules
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var names []string
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			switch {
			case r.Alert == "" || strings.TrimSpace(r.Expr) == "":
				t.Errorf("%s: group %s: a rule without alert or expr: %+v", path, g.Name, r)
			case r.For != "" && !promDuration.MatchString(r.For):
				t.Errorf("%s: %s: for %q is not a Prometheus duration", path, r.Alert, r.For)
			case !slices.Contains([]string{"page", "warning", "info"}, r.Labels["severity"]):
				t.Errorf("%s: %s: severity %q, want page, warning or info", path, r.Alert, r.Labels["severity"])
			case r.Annotations["summary"] == "" || r.Annotations["runbook"] == "":
				t.Errorf("%s: %s: want annotations.summary and annotations.runbook (what to check, and where the docs say more)", path, r.Alert)
			}
			for _, m := range metricName.FindAllString(r.Expr, -1) {
				if !slices.Contains(names, m) {
					names = append(names, m)
				}
			}
		}
	}
	if n == 0 || len(names) == 0 {
		t.Fatalf("%s: %d rules naming %d idemgate metrics", path, n, len(names))
	}
	return names
}

// freshNodeMetrics starts a 3-node cluster (democluster: the node
// package's wiring, real Raft on loopback; stopped when the test ends) and returns a node's
// /metrics once it has its peer series, the metric names its registry
// describes (labelled families with no series yet among them), and the
// cluster file's route names.
func freshNodeMetrics(t *testing.T) (families map[string]*dto.MetricFamily, registered map[string]bool, routes []string) {
	t.Helper()
	nodes, file, err := democluster.Start(t.TempDir(), 3, "127.0.0.1:1", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Stop(time.Second)
		}
	})
	// Each node has started a prober per peer (its peer series) within a
	// quarter of a second of knowing its members.
	testsupport.WaitFor(t, "a scrape with the peer series", 10*time.Second, func() bool {
		r, err := testsupport.Do("GET", "http://"+nodes[0].API.Addr()+"/metrics", "")
		if err != nil || r.Status != 200 {
			return false
		}
		parser := expfmt.NewTextParser(model.LegacyValidation)
		families, err = parser.TextToMetricFamilies(strings.NewReader(r.Body))
		if err != nil {
			t.Fatal(err)
		}
		return len(families["idemgate_peer_reachable"].GetMetric()) == 2
	})
	registered = map[string]bool{}
	ch := make(chan *prometheus.Desc)
	go func() {
		nodes[0].Reg.Describe(ch)
		close(ch)
	}()
	for d := range ch {
		if m := descName.FindStringSubmatch(d.String()); m != nil {
			registered[m[1]] = true
		}
	}
	for _, r := range file.Routes {
		routes = append(routes, r.Name)
	}
	return families, registered, routes
}

// TestAlertsNameRegisteredMetrics starts a 3-node cluster (the node
// package's wiring, real Raft on loopback) and checks that every metric
// deploy/alerts.yaml names is registered on a node's registry: described
// by its collectors, so labelled counters that have no series yet count.
func TestAlertsNameRegisteredMetrics(t *testing.T) {
	names := alertMetrics(t, filepath.Join("deploy", "alerts.yaml"))
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	_, registered, _ := freshNodeMetrics(t)
	if len(registered) < 10 {
		t.Fatalf("a node registers %d metrics: %v", len(registered), registered)
	}
	for _, name := range names {
		if registered[name] || registered[histogramSuffix.ReplaceAllString(name, "")] {
			continue
		}
		t.Errorf("deploy/alerts.yaml uses %s, which a node does not register", name)
	}
}

// TestSystemdUnitVerifies runs systemd-analyze verify on the unit, with
// ExecStart pointed at a binary that exists (systemd checks that it does).
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	unit, err := os.ReadFile(filepath.Join("deploy", "systemd", "idemgate.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Restart=on-failure", "User=idemgate", "LimitNOFILE=", "ExecReload=/bin/kill -HUP $MAINPID",
		"ProtectSystem=strict", "ReadWritePaths=/var/lib/idemgate", "RestartPreventExitStatus=2"} {
		if !bytes.Contains(unit, []byte(want)) {
			t.Errorf("deploy/systemd/idemgate.service: no %q", want)
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "idemgate")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "idemgate.service")
	if err := os.WriteFile(path, bytes.ReplaceAll(unit, []byte("/usr/local/bin/idemgate"), []byte(bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	// Lines about the host (no systemd running, a user that does not
	// exist here) are not the unit's; anything naming the file is.
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, path) || strings.Contains(l, "idemgate.service:") {
			t.Errorf("systemd-analyze verify: %s", l)
		}
	}
	if err != nil && !t.Failed() {
		t.Logf("systemd-analyze verify exited %v (not about the unit):\n%s", err, out)
	}
}

// readAlertRules reads deploy/alerts.yaml.
func readAlertRules(t *testing.T) alertRules {
	t.Helper()
	return readRuleFile(t, filepath.Join("deploy", "alerts.yaml"))
}

func readRuleFile(t *testing.T, path string) alertRules {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rules alertRules
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	return rules
}

// promtoolOrSkip is promtool's path; it skips without one, except under CI
// (CI set), where it fails: .ci/run installs it.
func promtoolOrSkip(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed: the alert rules' tests need it (.ci/run installs it)")
		}
		t.Skip("promtool is not installed (not under CI, so skipping): .ci/run shows how to install it")
	}
	return p
}

// TestAlertRulesPromtool: each rule file (deploy/alerts.yaml, the node's;
// deploy/reconcile-alerts.yaml, the reconcile job's textfile metrics)
// passes promtool check rules, and its _test.yaml, with a test for every
// alert in which it fires and one in which it stays silent, passes
// promtool test rules. Every rule is complete (severity, summary, runbook).
func TestAlertRulesPromtool(t *testing.T) {
	promtool := promtoolOrSkip(t)
	for _, name := range []string{"alerts", "reconcile-alerts"} {
		rulesPath := filepath.Join("deploy", name+".yaml")
		testsPath := filepath.Join("deploy", name+"_test.yaml")
		alertMetrics(t, rulesPath)
		for _, args := range [][]string{{"check", "rules", rulesPath}, {"test", "rules", testsPath}} {
			if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
				t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}

		var tests struct {
			Tests []struct {
				Name          string `yaml:"name"`
				AlertRuleTest []struct {
					Alertname string           `yaml:"alertname"`
					ExpAlerts []map[string]any `yaml:"exp_alerts"`
				} `yaml:"alert_rule_test"`
			} `yaml:"tests"`
		}
		b, err := os.ReadFile(testsPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, &tests); err != nil {
			t.Fatal(err)
		}
		fires, silent := map[string]bool{}, map[string]bool{}
		for _, tc := range tests.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname] = true
				} else {
					silent[a.Alertname] = true
				}
			}
		}
		for _, g := range readRuleFile(t, rulesPath).Groups {
			for _, r := range g.Rules {
				if !fires[r.Alert] {
					t.Errorf("%s has no test in which %s fires", testsPath, r.Alert)
				}
				if !silent[r.Alert] {
					t.Errorf("%s has no test in which %s stays silent (exp_alerts: [])", testsPath, r.Alert)
				}
			}
		}
	}
}

// alertSelector is one metric selector of an alert expression or of
// docs/operations.md's "What to alert on" table: a name and its label matchers
// (label -> values it must match; a bare label: any value).
type alertSelector struct {
	name   string
	labels map[string][]string
}

var (
	selectorRe = regexp.MustCompile(`\b(idemgate_[a-z0-9_]+)(\{([^}]*)\})?`)
	matcherRe  = regexp.MustCompile(`^\s*([a-z_]+)\s*(=~|=)?\s*(?:"([^"]*)")?\s*$`)
)

func parseSelectors(t *testing.T, where, s string) []alertSelector {
	t.Helper()
	var out []alertSelector
	for _, m := range selectorRe.FindAllStringSubmatch(s, -1) {
		sel := alertSelector{name: m[1], labels: map[string][]string{}}
		if m[3] != "" {
			for _, part := range strings.Split(m[3], ",") {
				mm := matcherRe.FindStringSubmatch(part)
				if mm == nil {
					t.Fatalf("%s: cannot read the matcher %q of %s", where, part, m[0])
				}
				switch mm[2] {
				case "":
					sel.labels[mm[1]] = nil
				case "=":
					sel.labels[mm[1]] = []string{mm[3]}
				case "=~":
					sel.labels[mm[1]] = strings.Split(strings.ReplaceAll(mm[3], `\|`, "|"), "|")
				}
			}
		}
		out = append(out, sel)
	}
	return out
}

// TestAlertSeriesExistFromStart scrapes a fresh node's /metrics (3 nodes,
// nothing sent yet) and finds a series for every selector an alert or
// docs/operations.md's alert table names: a labelled counter an alert counts up from
// must exist at 0 before its first event, or increase() cannot see that
// event. idemgate_requests_total{outcome=...} is there for every route;
// idemgate_peer_rejected_total for every reason docs/security.md lists;
// the token counters for scopes no route names ("other").
func TestAlertSeriesExistFromStart(t *testing.T) {
	var sels []alertSelector
	for _, g := range readAlertRules(t).Groups {
		for _, r := range g.Rules {
			sels = append(sels, parseSelectors(t, "deploy/alerts.yaml "+r.Alert, r.Expr)...)
		}
	}
	operations, err := os.ReadFile("docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	table := regexp.MustCompile("(?s)### What to alert on\n.*?\n\n(\\|.*?)\n\n").FindSubmatch(operations)
	if table == nil {
		t.Fatal("docs/operations.md has no table under ### What to alert on")
	}
	for _, row := range strings.Split(string(table[1]), "\n") {
		if cells := strings.Split(row, " | "); len(cells) > 1 {
			sels = append(sels, parseSelectors(t, "docs/operations.md's alert table", cells[0])...)
		}
	}
	security, err := os.ReadFile("docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	reasons := regexp.MustCompile("(?s)counted in `idemgate_peer_rejected_total\\{reason\\}` \\(([^)]*)\\)").FindSubmatch(security)
	if reasons == nil {
		t.Fatal("docs/security.md lists no reasons for idemgate_peer_rejected_total")
	}
	for _, w := range regexp.MustCompile("`([a-z_]+)`").FindAllSubmatch(reasons[1], -1) {
		sels = append(sels, alertSelector{name: "idemgate_peer_rejected_total", labels: map[string][]string{"reason": {string(w[1])}}})
	}
	// The dashboard's token panels count up from these too.
	sels = append(sels,
		alertSelector{name: "idemgate_tokens_issued_total", labels: map[string][]string{"scope": {"other"}}},
		alertSelector{name: "idemgate_tokens_consumed_total", labels: map[string][]string{"scope": {"other"}, "result": {"ok", "used"}}})
	if len(sels) < 20 {
		t.Fatalf("read only %d selectors: %+v", len(sels), sels)
	}
	if testing.Short() {
		t.Skip("starts a cluster")
	}

	families, _, routes := freshNodeMetrics(t)
	for _, sel := range sels {
		f := families[sel.name]
		if f == nil {
			t.Errorf("a fresh node exports no %s", sel.name)
			continue
		}
		want := []map[string]string{{}}
		for label, values := range sel.labels {
			if len(values) == 0 {
				values = []string{"*"} // a bare label: the series has it
			}
			var next []map[string]string
			for _, w := range want {
				for _, v := range values {
					m := maps.Clone(w)
					m[label] = v
					next = append(next, m)
				}
			}
			want = next
		}
		if sel.name == "idemgate_requests_total" {
			var per []map[string]string
			for _, w := range want {
				for _, r := range routes {
					m := maps.Clone(w)
					m["route"] = r
					per = append(per, m)
				}
			}
			want = per
		}
		for _, w := range want {
			if !hasSeries(f, w) {
				t.Errorf("a fresh node has no %s series with %v", sel.name, w)
			}
		}
	}
}

// hasSeries reports whether f has a series whose labels include want ("*":
// any value).
func hasSeries(f *dto.MetricFamily, want map[string]string) bool {
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range want {
			if g, has := got[k]; !has || (v != "*" && g != v) {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// TestDeployDocLinks: every docs/ page a rule's runbook or a dashboard panel
// points to exists, and so does the heading its #fragment names: an operator
// paged at night follows the link, and a heading renamed since would leave
// the runbook pointing nowhere.
func TestDeployDocLinks(t *testing.T) {
	link := regexp.MustCompile(`\bdocs/[a-z0-9-]+\.md(#[a-z0-9_-]+)?`)
	headings := map[string]map[string]bool{}
	n := 0
	for _, name := range []string{"alerts.yaml", "reconcile-alerts.yaml", "grafana-dashboard.json"} {
		b, err := os.ReadFile(filepath.Join("deploy", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range link.FindAllString(string(b), -1) {
			n++
			page, _, _ := strings.Cut(l, "#")
			if headings[page] == nil {
				if text, err := os.ReadFile(filepath.FromSlash(page)); err == nil {
					headings[page] = headingAnchors(string(text))
				}
			}
			for _, problem := range checkLink("README.md", l, headings) {
				t.Errorf("deploy/%s: %s: %s", name, l, problem)
			}
		}
	}
	if n < 10 {
		t.Fatalf("deploy/ names only %d docs/ links: the scan is broken", n)
	}
}
