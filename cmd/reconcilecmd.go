package cmd

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/idemgate/idemgate/api"
	"github.com/idemgate/idemgate/config"
)

// `idemgate reconcile`: the day's records (GET /v1/records/export) held
// against the payment provider's statement (a CSV file), the last line
// of defence the gateway cannot be for itself: what it let through twice,
// and what the provider did that it has no record of, show up here.

// maxInputLine bounds one line of either input: an export line is a few
// hundred bytes, a statement's row rarely more; a file with a longer line
// is not one of them and is refused rather than read into memory whole.
const maxInputLine = 1 << 20

// reconcileReport is what reconcile found; each list sorted, so two runs
// over the same inputs print the same report.
type reconcileReport struct {
	Records              int                `json:"records"`
	LedgerRows           int                `json:"ledger_rows"`
	ChargedTwice         []chargedTwice     `json:"charged_more_than_once"`
	ChargesWithoutRecord []ledgerRow        `json:"charges_without_record"`
	RecordsWithoutCharge []exportedRecord   `json:"records_without_charge"`
	SuspectedDuplicates  []suspectedDupPair `json:"suspected_duplicates"`
	Clean                bool               `json:"clean"`
}

// chargedTwice is a key the statement has on more than one row.
type chargedTwice struct {
	Key   string   `json:"key"`
	Lines []int    `json:"lines"` // the statement's line numbers (the header is line 1)
	IDs   []string `json:"ids,omitempty"`
}

// ledgerRow is one charge of the statement.
type ledgerRow struct {
	Line int    `json:"line"`
	Key  string `json:"key"`
	ID   string `json:"id,omitempty"`
}

// exportedRecord is what reconcile keeps of an export line.
type exportedRecord struct {
	Scope       string    `json:"scope"`
	Tenant      string    `json:"tenant"`
	Key         string    `json:"key"`
	State       string    `json:"state"`
	StatusCode  int       `json:"status_code,omitempty"`
	ReconcileID string    `json:"reconcile_id,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	fingerprint string
}

// suspectedDupPair is two records under different keys that look like one
// request: the same reconcile id (the upstream's charge), or the same
// fingerprint within the window.
type suspectedDupPair struct {
	Scope      string `json:"scope"`
	Tenant     string `json:"tenant"`
	Key        string `json:"key"`
	EarlierKey string `json:"earlier_key"`
	Why        string `json:"why"` // "reconcile_id" or "fingerprint"
}

// reconcileCmd is `idemgate reconcile`.
func reconcileCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "idemgate reconcile --export FILE --ledger FILE.csv --ledger-key COLUMN [--ledger-id COLUMN] [--window D] [--json] [--metrics-file FILE.prom]"
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	exportPath := fs.String("export", "", "the records export: the body of GET /v1/records/export (NDJSON)")
	ledgerPath := fs.String("ledger", "", "the payment provider's statement: CSV with a header row, one charge per row")
	keyCol := fs.String("ledger-key", "", "the statement's column holding the idempotency key of each charge")
	idCol := fs.String("ledger-id", "", "the statement's column holding the charge id, matched with the records' reconcile_id (optional)")
	window := fs.Duration("window", config.DefaultSuspectWindow, "two records with one fingerprint under different keys this close together are suspected duplicates")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	metricsPath := fs.String("metrics-file", "", "write the run's gauges (findings by kind, counts, last run and last success) to this file for node_exporter's textfile collector, replaced atomically")
	if _, code, ok := commandLine(fs, "reconcile", usage, "", args, stdout, stderr); !ok {
		return code
	}
	if *metricsPath != "" {
		if err := checkMetricsPath(*metricsPath); err != nil {
			fmt.Fprintf(stderr, "idemgate reconcile: %v\n", err)
			return 2
		}
	}
	now := time.Now()
	// fail reports input reconcile cannot trust; with --metrics-file, the
	// failed run is recorded too (its time, not a report).
	fail := func(err error) int {
		fmt.Fprintf(stderr, "idemgate reconcile: %v\n", err)
		if *metricsPath != "" {
			if err := writeReconcileMetrics(*metricsPath, nil, now); err != nil {
				fmt.Fprintf(stderr, "idemgate reconcile: %v\n", err)
			}
		}
		return 2
	}
	switch {
	case *exportPath == "":
		return fail(errors.New("--export: required"))
	case *ledgerPath == "":
		return fail(errors.New("--ledger: required"))
	case *keyCol == "":
		return fail(errors.New("--ledger-key: required"))
	case *window < 0:
		return fail(fmt.Errorf("--window: %s is negative", *window))
	}
	records, err := readExportFile(*exportPath)
	if err != nil {
		return fail(err)
	}
	rows, err := readLedgerFile(*ledgerPath, *keyCol, *idCol)
	if err != nil {
		return fail(err)
	}
	rep := reconcile(records, rows, *idCol != "", *window)
	if *metricsPath != "" {
		// Before the report: a report whose metrics were not written
		// would leave the alerts on the day before's.
		if err := writeReconcileMetrics(*metricsPath, &rep, now); err != nil {
			fmt.Fprintf(stderr, "idemgate reconcile: %v\n", err)
			return 2
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		printReport(stdout, rep)
	}
	if !rep.Clean {
		return 1
	}
	return 0
}

// readExportFile reads an export: every line one record, then the end
// line; an export without it (cut off, or failed part way) is refused,
// for a reconciliation over part of the records would report charges
// without records that have them.
func readExportFile(path string) ([]exportedRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--export: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxInputLine)
	var out []exportedRecord
	var end *api.ExportEnd
	for n := 1; sc.Scan(); n++ {
		if end != nil {
			return nil, fmt.Errorf("%s:%d: a line after the end line", path, n)
		}
		var l struct {
			api.ExportLine
			api.ExportEnd
		}
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("%s:%d: not a line of a records export: %v", path, n, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%s:%d: more than one JSON value on the line", path, n)
		}
		if l.End || l.Error != "" || (l.Key == "" && l.Scope == "") {
			e := l.ExportEnd
			end = &e
			continue
		}
		created, err := time.Parse(time.RFC3339Nano, l.CreatedAt)
		if err != nil || l.Scope == "" || l.Key == "" || l.State == "" {
			return nil, fmt.Errorf("%s:%d: a record needs scope, key, state and an RFC 3339 created_at", path, n)
		}
		out = append(out, exportedRecord{Scope: l.Scope, Tenant: l.Tenant, Key: l.Key, State: l.State, StatusCode: l.StatusCode,
			ReconcileID: l.ReconcileID, CreatedAt: created, fingerprint: l.Fingerprint})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w (a line longer than %d bytes is no export line)", path, err, maxInputLine)
	}
	switch {
	case end == nil:
		return nil, fmt.Errorf("%s: no end line: the export was cut off; fetch it again", path)
	case end.Error != "":
		return nil, fmt.Errorf("%s: the export failed part way: %s", path, end.Error)
	case !end.End || end.Records != int64(len(out)):
		return nil, fmt.Errorf("%s: the end line counts %d records, the file has %d", path, end.Records, len(out))
	}
	return out, nil
}

// lineLimit fails a read once a line grows past max bytes: csv.Reader
// reads a row whole, however long.
type lineLimit struct {
	r   *bufio.Reader
	max int
	cur int
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for _, c := range p[:n] {
		if l.cur++; c == '\n' {
			l.cur = 0
		} else if l.cur > l.max {
			return 0, fmt.Errorf("a line longer than %d bytes", l.max)
		}
	}
	return n, err
}

// readLedgerFile reads the statement: a header row naming the columns,
// then one charge per row, every row as many fields as the header.
func readLedgerFile(path, keyCol, idCol string) ([]ledgerRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--ledger: %w", err)
	}
	defer f.Close()
	cr := csv.NewReader(&lineLimit{r: bufio.NewReader(f), max: maxInputLine})
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty; want a header row naming the columns", path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ki, ii := -1, -1
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")) // a spreadsheet's byte-order mark
		for _, c := range []struct {
			name string
			at   *int
		}{{keyCol, &ki}, {idCol, &ii}} {
			if c.name != "" && strings.EqualFold(h, c.name) {
				if *c.at >= 0 {
					return nil, fmt.Errorf("%s: the header names column %q twice", path, c.name)
				}
				*c.at = i
			}
		}
	}
	if ki < 0 {
		return nil, fmt.Errorf("%s: --ledger-key: no column %q in the header %q", path, keyCol, strings.Join(header, ","))
	}
	if idCol != "" && ii < 0 {
		return nil, fmt.Errorf("%s: --ledger-id: no column %q in the header %q", path, idCol, strings.Join(header, ","))
	}
	var out []ledgerRow
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := cr.FieldPos(0)
		r := ledgerRow{Line: line, Key: strings.TrimSpace(rec[ki])}
		if ii >= 0 {
			r.ID = strings.TrimSpace(rec[ii])
		}
		out = append(out, r)
	}
}

// reconcile holds the records against the statement's rows. A record is
// charged when a row has its key (or, byID, its reconcile id); a row is
// recorded when a record has its key (or its id as reconcile id). Only a
// completed record with a 2xx answer is expected to have a charge: a
// declined payment (402), an in-flight or unknown record has none.
func reconcile(records []exportedRecord, rows []ledgerRow, byID bool, window time.Duration) reconcileReport {
	rep := reconcileReport{Records: len(records), LedgerRows: len(rows),
		ChargedTwice: []chargedTwice{}, ChargesWithoutRecord: []ledgerRow{}, RecordsWithoutCharge: []exportedRecord{},
		SuspectedDuplicates: []suspectedDupPair{}}
	recKeys, recIDs := map[string]bool{}, map[string]bool{}
	for _, r := range records {
		recKeys[r.Key] = true
		if r.ReconcileID != "" {
			recIDs[r.ReconcileID] = true
		}
	}
	rowKeys, rowIDs := map[string][]ledgerRow{}, map[string]bool{}
	for _, r := range rows {
		if r.Key != "" {
			rowKeys[r.Key] = append(rowKeys[r.Key], r)
		}
		if r.ID != "" {
			rowIDs[r.ID] = true
		}
		if !(r.Key != "" && recKeys[r.Key]) && !(byID && r.ID != "" && recIDs[r.ID]) {
			rep.ChargesWithoutRecord = append(rep.ChargesWithoutRecord, r)
		}
	}
	for key, rs := range rowKeys {
		if len(rs) < 2 {
			continue
		}
		c := chargedTwice{Key: key}
		for _, r := range rs {
			c.Lines = append(c.Lines, r.Line)
			if r.ID != "" {
				c.IDs = append(c.IDs, r.ID)
			}
		}
		rep.ChargedTwice = append(rep.ChargedTwice, c)
	}
	sort.Slice(rep.ChargedTwice, func(i, j int) bool { return rep.ChargedTwice[i].Key < rep.ChargedTwice[j].Key })
	for _, r := range records {
		if r.State != "completed" || r.StatusCode < 200 || r.StatusCode > 299 {
			continue
		}
		if len(rowKeys[r.Key]) == 0 && !(byID && r.ReconcileID != "" && rowIDs[r.ReconcileID]) {
			rep.RecordsWithoutCharge = append(rep.RecordsWithoutCharge, r)
		}
	}
	rep.SuspectedDuplicates = suspectedDuplicates(records, window)
	rep.Clean = len(rep.ChargedTwice) == 0 && len(rep.ChargesWithoutRecord) == 0 &&
		len(rep.RecordsWithoutCharge) == 0 && len(rep.SuspectedDuplicates) == 0
	return rep
}

// suspectedDuplicates pairs records of one scope and tenant under
// different keys that carry the same reconcile id (at any distance: one
// charge recorded twice is never a coincidence), or the same fingerprint
// (method, path, query and body) begun within window of each other: a
// client that made a new key for its retry, as the gateway's
// GET /v1/suspects flags live with the body alone.
func suspectedDuplicates(records []exportedRecord, window time.Duration) []suspectedDupPair {
	type group struct{ scope, tenant, why, value string }
	groups := map[group][]exportedRecord{}
	for _, r := range records {
		if r.ReconcileID != "" {
			g := group{r.Scope, r.Tenant, "reconcile_id", r.ReconcileID}
			groups[g] = append(groups[g], r)
		}
		if r.fingerprint != "" {
			g := group{r.Scope, r.Tenant, "fingerprint", r.fingerprint}
			groups[g] = append(groups[g], r)
		}
	}
	out := []suspectedDupPair{}
	seen := map[[4]string]bool{}
	for g, rs := range groups {
		if len(rs) < 2 {
			continue
		}
		sort.Slice(rs, func(i, j int) bool {
			if !rs[i].CreatedAt.Equal(rs[j].CreatedAt) {
				return rs[i].CreatedAt.Before(rs[j].CreatedAt)
			}
			return rs[i].Key < rs[j].Key
		})
		for i := 1; i < len(rs); i++ {
			prev, r := rs[i-1], rs[i]
			if prev.Key == r.Key || (g.why == "fingerprint" && r.CreatedAt.Sub(prev.CreatedAt) > window) {
				continue
			}
			id := [4]string{g.scope, g.tenant, r.Key, prev.Key}
			if seen[id] {
				continue // both the id and the fingerprint match: one pair
			}
			seen[id] = true
			out = append(out, suspectedDupPair{Scope: g.scope, Tenant: g.tenant, Key: r.Key, EarlierKey: prev.Key, Why: g.why})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Scope != b.Scope {
			return a.Scope < b.Scope
		}
		if a.Tenant != b.Tenant {
			return a.Tenant < b.Tenant
		}
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		return a.EarlierKey < b.EarlierKey
	})
	return out
}

func printReport(w io.Writer, rep reconcileReport) {
	fmt.Fprintf(w, "reconcile: %d records, %d statement rows\n", rep.Records, rep.LedgerRows)
	fmt.Fprintf(w, "keys charged more than once: %d\n", len(rep.ChargedTwice))
	for _, c := range rep.ChargedTwice {
		fmt.Fprintf(w, "  %q on lines %v", c.Key, c.Lines)
		if len(c.IDs) > 0 {
			fmt.Fprintf(w, ", charges %s", strings.Join(c.IDs, ", "))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "charges with no record: %d\n", len(rep.ChargesWithoutRecord))
	for _, r := range rep.ChargesWithoutRecord {
		fmt.Fprintf(w, "  line %d: key %q", r.Line, r.Key)
		if r.ID != "" {
			fmt.Fprintf(w, ", charge %s", r.ID)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "records completed with no charge: %d\n", len(rep.RecordsWithoutCharge))
	for _, r := range rep.RecordsWithoutCharge {
		fmt.Fprintf(w, "  %s %q (tenant %q): %d at %s", r.Scope, r.Key, r.Tenant, r.StatusCode, r.CreatedAt.UTC().Format(time.RFC3339))
		if r.ReconcileID != "" {
			fmt.Fprintf(w, ", charge %s", r.ReconcileID)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "suspected duplicates: %d\n", len(rep.SuspectedDuplicates))
	for _, s := range rep.SuspectedDuplicates {
		fmt.Fprintf(w, "  %s %q (tenant %q) looks like %q: same %s\n", s.Scope, s.Key, s.Tenant, s.EarlierKey, s.Why)
	}
	if rep.Clean {
		fmt.Fprintln(w, "clean: every charge has its record and every record its charge")
	}
}
