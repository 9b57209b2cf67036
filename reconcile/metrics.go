package reconcile

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// `idemgate reconcile --metrics-file F.prom`: the run's outcome as gauges
// in a file node_exporter's textfile collector serves
// (--collector.textfile.directory). Reconciliation runs beside the
// cluster, from the provider's statement, so no node can export it; the
// machine that runs it can. deploy/reconcile-alerts.yaml alerts on it.

// The gauges of the file. A run that cannot trust its input (exit 2)
// rewrites only the run's time: the findings, counts and last success
// stay those of the last run that made a report, so a failed run neither
// clears an alert on yesterday's findings nor raises one of its own
// beyond IdemgateReconcileStale's.
const (
	metricFindings    = "idemgate_reconcile_findings"
	metricRecords     = "idemgate_reconcile_records"
	metricLedgerRows  = "idemgate_reconcile_ledger_rows"
	metricLastRun     = "idemgate_reconcile_last_run_timestamp_seconds"
	metricLastSuccess = "idemgate_reconcile_last_success_timestamp_seconds"
)

const helpLastSuccess = "When idemgate reconcile last made a report (Unix seconds; 0: never), findings or not."

// keptOnFailure are the families a failed run carries over from the file.
var keptOnFailure = []string{metricFindings, metricRecords, metricLedgerRows, metricLastSuccess}

// checkMetricsPath refuses a path the textfile collector would not read
// (it reads *.prom only), before any input is read.
func checkMetricsPath(path string) error {
	if !strings.HasSuffix(path, ".prom") || strings.HasSuffix(path, "/.prom") || path == ".prom" {
		return fmt.Errorf("--metrics-file: %q: want a file name ending in .prom (node_exporter's textfile collector reads no other)", path)
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("--metrics-file: %s is not a regular file", path)
	}
	return nil
}

// writeMetrics replaces path, atomically (a temporary file in
// its directory, then a rename: the collector never reads half a file),
// with the gauges of a run at now: rep's when it made a report, else
// (rep nil) the failed run's time over what path held before.
func writeMetrics(path string, rep *Report, now time.Time) error {
	reg := prometheus.NewPedanticRegistry()
	lastRun := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricLastRun,
		Help: "When idemgate reconcile last ran (Unix seconds), whether or not it could trust its input."})
	lastRun.Set(float64(now.Unix()))
	reg.MustRegister(lastRun)
	var gatherer prometheus.Gatherer = reg
	if rep != nil {
		findings := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricFindings,
			Help: "Findings of the last reconcile that made a report, by kind."}, []string{"kind"})
		for _, k := range []struct {
			kind string
			n    int
		}{
			{"charged_more_than_once", len(rep.ChargedTwice)},
			{"charges_without_record", len(rep.ChargesWithoutRecord)},
			{"records_without_charge", len(rep.RecordsWithoutCharge)},
			{"suspected_duplicates", len(rep.SuspectedDuplicates)},
		} {
			findings.WithLabelValues(k.kind).Set(float64(k.n))
		}
		records := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricRecords,
			Help: "Records the last reconcile that made a report read from the export."})
		records.Set(float64(rep.Records))
		rows := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricLedgerRows,
			Help: "Statement rows the last reconcile that made a report read from the ledger."})
		rows.Set(float64(rep.LedgerRows))
		lastSuccess := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricLastSuccess, Help: helpLastSuccess})
		lastSuccess.Set(float64(now.Unix()))
		reg.MustRegister(findings, records, rows, lastSuccess)
	} else {
		kept, err := previousMetrics(path)
		if err != nil {
			return err
		}
		gatherer = prometheus.Gatherers{reg, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return kept, nil })}
	}
	if err := prometheus.WriteToTextfile(path, gatherer); err != nil {
		return fmt.Errorf("--metrics-file: %w", err)
	}
	return nil
}

// previousMetrics is what a failed run keeps of path: the families of
// keptOnFailure it holds, and a last success of 0 (never) when it holds
// none (no file yet). A file that is not the text format is refused
// rather than overwritten: it may be another job's.
func previousMetrics(path string) ([]*dto.MetricFamily, error) {
	var kept []*dto.MetricFamily
	f, err := os.Open(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("--metrics-file: %w", err)
	default:
		defer f.Close()
		parser := expfmt.NewTextParser(model.LegacyValidation)
		families, err := parser.TextToMetricFamilies(f)
		if err != nil {
			return nil, fmt.Errorf("--metrics-file: %s is not a metrics file (left as it is): %v", path, err)
		}
		for _, name := range keptOnFailure {
			if mf := families[name]; mf != nil {
				kept = append(kept, mf)
			}
		}
	}
	for _, mf := range kept {
		if mf.GetName() == metricLastSuccess {
			return kept, nil
		}
	}
	never := &dto.MetricFamily{Name: ptr(metricLastSuccess), Type: dto.MetricType_GAUGE.Enum(),
		Help:   ptr(helpLastSuccess),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: ptr(0.0)}}}}
	return append(kept, never), nil
}

func ptr[T any](v T) *T { return &v }
