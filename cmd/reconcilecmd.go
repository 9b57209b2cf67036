package cmd

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/reconcile"
)

// reconcileCmd is `idemgate reconcile`: package reconcile's run over the
// files its flags name. Exit 1 on any finding, 2 on input it cannot trust
// (one line per error, a failed metrics file's too).
func reconcileCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "idemgate reconcile --export FILE --ledger FILE.csv --ledger-key COLUMN [--ledger-id COLUMN] [--window D] [--json] [--metrics-file FILE.prom]"
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	var c reconcile.Config
	fs.StringVar(&c.Export, "export", "", "the records export: the body of GET /v1/records/export (NDJSON)")
	fs.StringVar(&c.Ledger, "ledger", "", "the payment provider's statement: CSV with a header row, one charge per row")
	fs.StringVar(&c.LedgerKey, "ledger-key", "", "the statement's column holding the idempotency key of each charge")
	fs.StringVar(&c.LedgerID, "ledger-id", "", "the statement's column holding the charge id, matched with the records' reconcile_id (optional)")
	fs.DurationVar(&c.Window, "window", config.DefaultSuspectWindow, "two records with one fingerprint under different keys this close together are suspected duplicates")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	fs.StringVar(&c.MetricsFile, "metrics-file", "", "write the run's gauges (findings by kind, counts, last run and last success) to this file for node_exporter's textfile collector, replaced atomically")
	if _, code, ok := commandLine(fs, "reconcile", usage, "", args, stdout, stderr); !ok {
		return code
	}
	rep, err := reconcile.Run(c)
	if err != nil {
		errs := []error{err}
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			errs = joined.Unwrap()
		}
		for _, err := range errs {
			fmt.Fprintf(stderr, "idemgate reconcile: %v\n", err)
		}
		return 2
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		rep.Print(stdout)
	}
	if !rep.Clean {
		return 1
	}
	return 0
}
