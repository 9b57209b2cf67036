package reconcile

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Config is one run: where its inputs are and how to read them. The
// command line's flags of `idemgate reconcile` are its fields.
type Config struct {
	// Export is the records export: the body of GET /v1/records/export
	// (NDJSON), its end line included.
	Export string
	// Ledger is the payment provider's statement: CSV with a header row,
	// one charge per row; LedgerKey names its column holding each charge's
	// idempotency key, LedgerID (optional) its charge id, matched with the
	// records' reconcile_id. Column names match case-insensitively.
	Ledger, LedgerKey, LedgerID string
	// Window is how close together two records with one fingerprint under
	// different keys must be begun to be suspected duplicates.
	Window time.Duration
	// MetricsFile, when set, is replaced with the run's gauges for
	// node_exporter's textfile collector (see writeMetrics).
	MetricsFile string
}

// Run reads both inputs and holds them against each other. An input it
// cannot trust (cut off, failed part way, malformed, a missing column) is
// an error, never a report over part of it. With c.MetricsFile, the run
// is recorded there before Run returns, a failed one too (its time, not
// a report): a report whose metrics were not written is an error, for it
// would leave the alerts on the day before's; a failed run whose metrics
// could not be written either returns both errors (errors.Join).
func Run(c Config) (Report, error) {
	if c.MetricsFile != "" {
		if err := checkMetricsPath(c.MetricsFile); err != nil {
			return Report{}, err
		}
	}
	now := time.Now()
	rep, err := c.run()
	if c.MetricsFile != "" {
		made := &rep
		if err != nil {
			made = nil
		}
		if werr := writeMetrics(c.MetricsFile, made, now); werr != nil {
			return Report{}, errors.Join(err, werr)
		}
	}
	if err != nil {
		return Report{}, err
	}
	return rep, nil
}

func (c Config) run() (Report, error) {
	switch {
	case c.Export == "":
		return Report{}, errors.New("--export: required")
	case c.Ledger == "":
		return Report{}, errors.New("--ledger: required")
	case c.LedgerKey == "":
		return Report{}, errors.New("--ledger-key: required")
	case c.Window < 0:
		return Report{}, fmt.Errorf("--window: %s is negative", c.Window)
	}
	records, err := readExport(c.Export)
	if err != nil {
		return Report{}, err
	}
	rows, err := readLedger(c.Ledger, c.LedgerKey, c.LedgerID)
	if err != nil {
		return Report{}, err
	}
	return compare(records, rows, c.LedgerID != "", c.Window), nil
}

// Report is what a run found; each list sorted, so two runs over the
// same inputs print the same report.
type Report struct {
	Records              int             `json:"records"`
	LedgerRows           int             `json:"ledger_rows"`
	ChargedTwice         []ChargedTwice  `json:"charged_more_than_once"`
	ChargesWithoutRecord []Charge        `json:"charges_without_record"`
	RecordsWithoutCharge []Record        `json:"records_without_charge"`
	SuspectedDuplicates  []SuspectedPair `json:"suspected_duplicates"`
	Clean                bool            `json:"clean"`
}

// ChargedTwice is a key the statement has on more than one row.
type ChargedTwice struct {
	Key   string   `json:"key"`
	Lines []int    `json:"lines"` // the statement's line numbers (the header is line 1)
	IDs   []string `json:"ids,omitempty"`
}

// Charge is one charge of the statement (one row).
type Charge struct {
	Line int    `json:"line"`
	Key  string `json:"key"`
	ID   string `json:"id,omitempty"`
}

// Record is what a run keeps of an export line.
type Record struct {
	Scope       string    `json:"scope"`
	Tenant      string    `json:"tenant"`
	Key         string    `json:"key"`
	State       string    `json:"state"`
	StatusCode  int       `json:"status_code,omitempty"`
	ReconcileID string    `json:"reconcile_id,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	fingerprint string
}

// SuspectedPair is two records under different keys that look like one
// request: the same reconcile id (the upstream's charge), or the same
// fingerprint within the window.
type SuspectedPair struct {
	Scope      string `json:"scope"`
	Tenant     string `json:"tenant"`
	Key        string `json:"key"`
	EarlierKey string `json:"earlier_key"`
	Why        string `json:"why"` // "reconcile_id" or "fingerprint"
}

// compare holds the records against the statement's rows. A record is
// charged when a row has its key (or, byID, its reconcile id); a row is
// recorded when a record has its key (or its id as reconcile id). Only a
// completed record with a 2xx answer is expected to have a charge: a
// declined payment (402), an in-flight or unknown record has none.
func compare(records []Record, rows []Charge, byID bool, window time.Duration) Report {
	rep := Report{Records: len(records), LedgerRows: len(rows),
		ChargedTwice: []ChargedTwice{}, ChargesWithoutRecord: []Charge{}, RecordsWithoutCharge: []Record{},
		SuspectedDuplicates: []SuspectedPair{}}
	recKeys, recIDs := map[string]bool{}, map[string]bool{}
	for _, r := range records {
		recKeys[r.Key] = true
		if r.ReconcileID != "" {
			recIDs[r.ReconcileID] = true
		}
	}
	rowKeys, rowIDs := map[string][]Charge{}, map[string]bool{}
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
		c := ChargedTwice{Key: key}
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
func suspectedDuplicates(records []Record, window time.Duration) []SuspectedPair {
	type group struct{ scope, tenant, why, value string }
	groups := map[group][]Record{}
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
	out := []SuspectedPair{}
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
			out = append(out, SuspectedPair{Scope: g.scope, Tenant: g.tenant, Key: r.Key, EarlierKey: prev.Key, Why: g.why})
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
