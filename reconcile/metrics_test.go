package reconcile

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// readMetricsFile parses a --metrics-file with the Prometheus text parser
// into name -> (labels as "k=v,..." -> value).
func readMetricsFile(t *testing.T, path string) map[string]map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]map[string]float64{}
	for name, mf := range families {
		if mf.GetType() != dto.MetricType_GAUGE {
			t.Errorf("%s: %s is a %s, want a gauge", path, name, mf.GetType())
		}
		out[name] = map[string]float64{}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out[name][strings.Join(ls, ",")] = m.GetGauge().GetValue()
		}
	}
	return out
}

// exitCode is the command line's exit for a run: 2 refused, 1 findings,
// 0 clean.
func exitCode(rep Report, err error) int {
	switch {
	case err != nil:
		return 2
	case !rep.Clean:
		return 1
	}
	return 0
}

// TestReconcileMetricsFile: --metrics-file writes the run's gauges for
// node_exporter's textfile collector, exactly: on the planted statement
// each kind's count, the records and rows read, and the run's time as
// last run and last success; a run refused its input keeps the last
// report's figures and success and moves only the last run; a clean run
// writes every kind at 0. Nothing else is left in the directory.
func TestReconcileMetricsFile(t *testing.T) {
	t.Parallel()
	exp, ledger := plantedExport(t), writeFile(t, "ledger.csv", plantedLedger)
	cutOff := writeFile(t, "cut.ndjson", `{"scope":"pay","tenant":"","key":"k1","state":"completed","status_code":201,"created_at":"2026-01-02T10:00:00Z"}`+"\n")
	dir := t.TempDir()
	prom := filepath.Join(dir, "idemgate-reconcile.prom")
	run := func(export string, want int) (before, after float64) {
		t.Helper()
		b := time.Now().Unix()
		rep, err := Run(Config{Export: export, Ledger: ledger, LedgerKey: "Idempotency Key", Window: window, MetricsFile: prom})
		if code := exitCode(rep, err); code != want {
			t.Fatalf("exit %d, want %d; error %v", code, want, err)
		}
		return float64(b), float64(time.Now().Unix())
	}
	inRange := func(what string, v, lo, hi float64) {
		t.Helper()
		if v < lo || v > hi {
			t.Errorf("%s = %v, want within [%v, %v]", what, v, lo, hi)
		}
	}

	// A first run refused its input: its time, and never a success.
	lo, hi := run(cutOff, 2)
	got := readMetricsFile(t, prom)
	inRange("last run of a refused first run", got[metricLastRun][""], lo, hi)
	if len(got) != 2 || got[metricLastSuccess][""] != 0 || len(got[metricLastSuccess]) != 1 {
		t.Errorf("a refused first run wrote %v; want only its last run and a last success of 0", got)
	}

	// The planted statement: the exact count of each kind.
	lo, hi = run(exp, 1)
	got = readMetricsFile(t, prom)
	want := map[string]map[string]float64{
		metricFindings: {
			"kind=charged_more_than_once": 1,
			"kind=charges_without_record": 2,
			"kind=records_without_charge": 1,
			"kind=suspected_duplicates":   2,
		},
		metricRecords:    {"": 10},
		metricLedgerRows: {"": 9},
	}
	ran := got[metricLastRun][""]
	inRange("last run", ran, lo, hi)
	if got[metricLastSuccess][""] != ran {
		t.Errorf("last success %v, last run %v: want one time", got[metricLastSuccess][""], ran)
	}
	delete(got, metricLastRun)
	delete(got, metricLastSuccess)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the planted statement's metrics:\n got %v\nwant %v", got, want)
	}

	// A refused run: the report's figures and success stay; the run moves.
	lo, hi = run(cutOff, 2)
	got = readMetricsFile(t, prom)
	inRange("last run of a refused run", got[metricLastRun][""], lo, hi)
	if got[metricLastSuccess][""] != ran {
		t.Errorf("a refused run moved the last success from %v to %v", ran, got[metricLastSuccess][""])
	}
	delete(got, metricLastRun)
	delete(got, metricLastSuccess)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("a refused run changed the report's metrics:\n got %v\nwant %v", got, want)
	}

	// A clean day: every kind at 0, so an alert sees it clear.
	t0 := "2026-01-02T10:00:00Z"
	clean := writeFile(t, "clean.ndjson", `{"scope":"pay","tenant":"","key":"k1","state":"completed","status_code":201,"created_at":"`+t0+`"}`+"\n"+`{"end":true,"records":1}`+"\n")
	b := time.Now().Unix()
	if rep, err := Run(Config{Export: clean, Ledger: writeFile(t, "c.csv", "key\nk1\n"), LedgerKey: "key", Window: window, MetricsFile: prom}); err != nil || !rep.Clean {
		t.Fatalf("clean: %+v, error %v", rep, err)
	}
	got = readMetricsFile(t, prom)
	inRange("last success of the clean run", got[metricLastSuccess][""], float64(b), float64(time.Now().Unix()))
	for kind, v := range got[metricFindings] {
		if v != 0 {
			t.Errorf("clean run: %s{%s} = %v", metricFindings, kind, v)
		}
	}
	if len(got[metricFindings]) != 4 || got[metricRecords][""] != 1 || got[metricLedgerRows][""] != 1 {
		t.Errorf("clean run: %v", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the textfile directory holds %v; want only %s (no temporary files left)", ents, filepath.Base(prom))
	}
}

// TestReconcileMetricsFileRefused: a --metrics-file the collector would
// not read, cannot be written, or holds something else is refused with an
// error naming it; no report is made whose metrics were not written, and
// another job's file is left as it was.
func TestReconcileMetricsFileRefused(t *testing.T) {
	t.Parallel()
	exp, ledger := plantedExport(t), writeFile(t, "ledger.csv", plantedLedger)
	dir := t.TempDir()
	foreign := filepath.Join(dir, "other.prom")
	if err := os.WriteFile(foreign, []byte("this is { not the text format\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "adir.prom"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, export string
		want               []string
	}{
		{"not .prom", filepath.Join(dir, "reconcile.txt"), exp, []string{`--metrics-file: "` + filepath.Join(dir, "reconcile.txt") + `": want a file name ending in .prom`}},
		{"bare .prom", filepath.Join(dir, ".prom"), exp, []string{"want a file name ending in .prom"}},
		{"a directory", filepath.Join(dir, "adir.prom"), exp, []string{"adir.prom is not a regular file"}},
		{"no such directory", filepath.Join(dir, "missing", "r.prom"), exp, []string{"--metrics-file: open " + filepath.Join(dir, "missing")}},
		{"another job's file, refused input", foreign, writeFile(t, "cut.ndjson", `{"scope":"pay","key":"k1","state":"in_flight","created_at":"2026-01-02T10:00:00Z"}`+"\n"), []string{"no end line", "other.prom is not a metrics file (left as it is)"}},
	} {
		rep, err := Run(Config{Export: tc.export, Ledger: ledger, LedgerKey: "Idempotency Key", Window: window, MetricsFile: tc.path})
		errs := []error{err}
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			errs = joined.Unwrap()
		}
		if err == nil || rep.Records != 0 || len(errs) != len(tc.want) {
			t.Errorf("%s: %+v, error %q; want no report and %d errors", tc.name, rep, err, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(errs[i].Error(), w) {
				t.Errorf("%s: error %d %q, want %q", tc.name, i+1, errs[i], w)
			}
		}
	}
	if b, _ := os.ReadFile(foreign); string(b) != "this is { not the text format\n" {
		t.Errorf("another job's file was changed: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("the directory holds %v; want only other.prom and adir.prom", ents)
	}
}

// TestReconcileAlertsNameWrittenMetrics: every idemgate_ metric
// deploy/reconcile-alerts.yaml names is one reconcile --metrics-file
// writes (the node does not register these; the e2e check of
// deploy/alerts.yaml cannot see them), with the label values it uses.
func TestReconcileAlertsNameWrittenMetrics(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile(filepath.Join("..", "deploy", "reconcile-alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	prom := filepath.Join(t.TempDir(), "r.prom")
	if _, err := Run(Config{Export: plantedExport(t), Ledger: writeFile(t, "l.csv", plantedLedger),
		LedgerKey: "Idempotency Key", Window: window, MetricsFile: prom}); err != nil {
		t.Fatal(err)
	}
	got := readMetricsFile(t, prom)
	names := regexp.MustCompile(`\bidemgate_[a-z0-9_]+`).FindAllString(string(rules), -1)
	if len(names) < 2 {
		t.Fatalf("deploy/reconcile-alerts.yaml names %v", names)
	}
	for _, n := range names {
		if got[n] == nil {
			t.Errorf("deploy/reconcile-alerts.yaml uses %s, which reconcile does not write (it writes %v)", n, slices.Sorted(maps.Keys(got)))
		}
	}
}
