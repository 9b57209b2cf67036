package reconcile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/api"
	"github.com/idemgate/idemgate/config"
)

// window is the suspect window the tests run with: the command line's
// default (5 minutes; the planted export's pairs sit either side of it).
const window = config.DefaultSuspectWindow

// exportFile writes an export of lines (and its end line) to a file.
func exportFile(t *testing.T, lines []api.ExportLine) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	for _, l := range lines {
		enc.Encode(l)
	}
	enc.Encode(api.ExportEnd{End: true, Records: int64(len(lines))})
	return writeFile(t, "export.ndjson", b.String())
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// plantedExport is a day of records with one discrepancy of each kind
// planted among them (see TestReconcileFindsEachKind).
func plantedExport(t *testing.T) string {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339Nano) }
	rec := func(key, state string, status int, fp, id string, d time.Duration) api.ExportLine {
		l := api.ExportLine{Scope: "pay", Key: key, State: state, StatusCode: status, Fingerprint: fp, CreatedAt: at(d), ReconcileID: id}
		if state == "completed" {
			l.CompletedAt = at(d + time.Second)
		}
		return l
	}
	return exportFile(t, []api.ExportLine{
		rec("k1", "completed", 201, "aa01", "ch_1", 0),
		rec("k2", "completed", 201, "aa02", "ch_2", time.Minute),    // charged twice
		rec("k3", "completed", 201, "aa03", "ch_3", 2*time.Minute),  // no row has its key; one has its id
		rec("k4", "completed", 402, "aa04", "", 3*time.Minute),      // declined: no charge expected
		rec("k5", "in_flight", 0, "aa05", "", 4*time.Minute),        // no charge expected
		rec("k6", "completed", 201, "aa01", "ch_6", 4*time.Minute),  // k1's fingerprint, 4 minutes on
		rec("k7", "completed", 201, "aa07", "ch_1", 30*time.Minute), // k1's charge id
		rec("k8", "completed", 201, "aa08", "ch_8", 40*time.Minute), // k9's fingerprint, 10 minutes apart:
		rec("k9", "completed", 201, "aa08", "ch_9", 50*time.Minute), // outside the window
		{Scope: "pay", Tenant: "t1", Key: "k1", State: "completed", StatusCode: 201, Fingerprint: "aa01", // another tenant's k1
			CreatedAt: at(time.Second), CompletedAt: at(2 * time.Second), ReconcileID: "ch_t1"},
	})
}

const plantedLedger = "\ufeffid,amount,Idempotency Key,created\n" +
	"ch_1,10,k1,2026-01-02\n" +
	"ch_2,10,k2,2026-01-02\n" +
	"ch_2b,10,k2,2026-01-02\n" + // line 4: k2 again
	"ch_3,10,,2026-01-02\n" + // line 5: no key; its id is k3's
	"ch_6,10,k6,2026-01-02\n" +
	"ch_7,10,k7,2026-01-02\n" +
	"ch_8,10,k8,2026-01-02\n" +
	"ch_9,10,k9,2026-01-02\n" +
	"\"ch_99\",\"1,000\",k99,2026-01-02\n" // line 10: a charge of no record

// TestReconcileFindsEachKind: on a statement with one discrepancy of each
// kind planted, a run reports exactly those; matching by
// the charge id as well settles the row without a key.
func TestReconcileFindsEachKind(t *testing.T) {
	t.Parallel()
	exp, ledger := plantedExport(t), writeFile(t, "ledger.csv", plantedLedger)
	for _, tc := range []struct {
		name string
		id   string
		want string
	}{
		{"by key (the id column unread)", "", `{
  "records": 10,
  "ledger_rows": 9,
  "charged_more_than_once": [{"key": "k2", "lines": [3, 4]}],
  "charges_without_record": [{"line": 5, "key": ""}, {"line": 10, "key": "k99"}],
  "records_without_charge": [{"scope": "pay", "tenant": "", "key": "k3", "state": "completed", "status_code": 201, "reconcile_id": "ch_3", "created_at": "2026-01-02T10:02:00Z"}],
  "suspected_duplicates": [
    {"scope": "pay", "tenant": "", "key": "k6", "earlier_key": "k1", "why": "fingerprint"},
    {"scope": "pay", "tenant": "", "key": "k7", "earlier_key": "k1", "why": "reconcile_id"}],
  "clean": false}`},
		{"by key and id", "ID", `{
  "records": 10,
  "ledger_rows": 9,
  "charged_more_than_once": [{"key": "k2", "lines": [3, 4], "ids": ["ch_2", "ch_2b"]}],
  "charges_without_record": [{"line": 10, "key": "k99", "id": "ch_99"}],
  "records_without_charge": [],
  "suspected_duplicates": [
    {"scope": "pay", "tenant": "", "key": "k6", "earlier_key": "k1", "why": "fingerprint"},
    {"scope": "pay", "tenant": "", "key": "k7", "earlier_key": "k1", "why": "reconcile_id"}],
  "clean": false}`},
	} {
		rep, err := Run(Config{Export: exp, Ledger: ledger, LedgerKey: "idempotency key", LedgerID: tc.id, Window: window})
		if err != nil || rep.Clean {
			t.Errorf("%s: clean %v, error %v; want findings", tc.name, rep.Clean, err)
		}
		out, _ := json.Marshal(rep)
		var got, want any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v: %s", tc.name, err, out)
		}
		if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, g, w)
		}
	}
	// The human summary says the same.
	rep, err := Run(Config{Export: exp, Ledger: ledger, LedgerKey: "Idempotency Key", Window: window})
	var b strings.Builder
	rep.Print(&b)
	out := b.String()
	for _, want := range []string{"reconcile: 10 records, 9 statement rows\n", "keys charged more than once: 1\n  \"k2\" on lines [3 4]\n",
		"charges with no record: 2\n", "line 10: key \"k99\"\n", "records completed with no charge: 1\n  pay \"k3\"",
		"suspected duplicates: 2\n  pay \"k6\" (tenant \"\") looks like \"k1\": same fingerprint\n"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("summary (error %v) lacks %q:\n%s", err, want, out)
		}
	}
}

// TestReconcileClean: a statement that matches the records is clean, and
// the summary says so.
func TestReconcileClean(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC).Format(time.RFC3339)
	exp := exportFile(t, []api.ExportLine{
		{Scope: "pay", Key: "k1", State: "completed", StatusCode: 201, Fingerprint: "01", CreatedAt: t0, CompletedAt: t0, ReconcileID: "ch_1"},
		{Scope: "pay", Key: "k2", State: "completed", StatusCode: 200, Fingerprint: "02", CreatedAt: t0, CompletedAt: t0, ReconcileID: "ch_2"},
		{Scope: "pay", Key: "k3", State: "completed", StatusCode: 409, Fingerprint: "03", CreatedAt: t0, CompletedAt: t0},
		{Scope: "pay", Key: "k4", State: "unknown", Fingerprint: "04", CreatedAt: t0},
	})
	ledger := writeFile(t, "ledger.csv", "key,charge\nk1,ch_1\r\nk2,ch_2\r\n")
	rep, err := Run(Config{Export: exp, Ledger: ledger, LedgerKey: "key", LedgerID: "charge", Window: window})
	var out strings.Builder
	rep.Print(&out)
	if err != nil || !rep.Clean || !strings.Contains(out.String(), "\nclean: ") {
		t.Errorf("error %v, clean %v, summary:\n%s\nwant clean", err, rep.Clean, out.String())
	}
	// An empty day against an empty statement is clean too.
	rep, err = Run(Config{Export: exportFile(t, nil), Ledger: writeFile(t, "l.csv", "key\n"), LedgerKey: "key", Window: window})
	if err != nil || !rep.Clean {
		t.Errorf("an empty day: clean %v, error %v", rep.Clean, err)
	}
}

// TestReconcileRefusesBadInput: an export or statement a run cannot trust
// is refused with an error saying why, never a report over part of it.
func TestReconcileRefusesBadInput(t *testing.T) {
	t.Parallel()
	good := `{"scope":"pay","tenant":"","key":"k1","state":"completed","status_code":201,"fingerprint":"01","created_at":"2026-01-02T10:00:00Z"}` + "\n"
	end := `{"end":true,"records":1}` + "\n"
	huge := strings.Repeat("x", 2<<20)
	for _, tc := range []struct {
		name, export, ledger string
		id                   string
		window               time.Duration
		want                 string
	}{
		{"export cut off", good, "key\nk1\n", "", window, "no end line: the export was cut off"},
		{"export failed part way", good + `{"end":false,"records":1,"error":"storage: damaged"}` + "\n", "key\nk1\n", "", window, "the export failed part way: storage: damaged"},
		{"end line miscounts", good + `{"end":true,"records":2}` + "\n", "key\nk1\n", "", window, "the end line counts 2 records, the file has 1"},
		{"a line after the end", good + end + good, "key\nk1\n", "", window, ":3: a line after the end line"},
		{"export not JSON", "scope,key\n" + end, "key\nk1\n", "", window, ":1: not a line of a records export"},
		{"export unknown field", `{"scope":"pay","key":"k1","state":"completed","body":"secret"}` + "\n" + end, "key\nk1\n", "", window, `unknown field "body"`},
		{"export bad time", strings.Replace(good, "2026-01-02T10:00:00Z", "yesterday", 1) + end, "key\nk1\n", "", window, ":1: a record needs scope, key, state and an RFC 3339 created_at"},
		{"export two values on a line", strings.TrimSuffix(good, "\n") + "{}\n" + end, "key\nk1\n", "", window, ":1: more than one JSON value"},
		{"export huge line", `{"scope":"` + huge + "\"}\n" + end, "key\nk1\n", "", window, "token too long"},
		{"empty ledger", good + end, "", "", window, "empty; want a header row"},
		{"no such column", good + end, "id,amount\nch_1,1\n", "", window, `--ledger-key: no column "key" in the header "id,amount"`},
		{"no such id column", good + end, "key\nk1\n", "charge", 0, `--ledger-id: no column "charge"`},
		{"column named twice", good + end, "key,KEY\nk1,k1\n", "", window, `the header names column "key" twice`},
		{"a row short of a field", good + end, "key,id\nk1,ch_1\nk2\n", "", window, "record on line 3: wrong number of fields"},
		{"a bare quote", good + end, "key,id\nk\"1,ch_1\n", "", window, `bare " in non-quoted-field`},
		{"an unclosed quote", good + end, "key,id\n\"k1,ch_1\n", "", window, `extraneous or missing " in quoted-field`},
		{"ledger huge line", good + end, "key\n" + huge + "\n", "", window, "a line longer than 1048576 bytes"},
		{"negative window", good + end, "key\nk1\n", "", -time.Second, "--window: -1s is negative"},
	} {
		rep, err := Run(Config{Export: writeFile(t, "e.ndjson", tc.export), Ledger: writeFile(t, "l.csv", tc.ledger), LedgerKey: "key",
			LedgerID: tc.id, Window: tc.window})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || rep.Records != 0 || rep.LedgerRows != 0 {
			t.Errorf("%s: %+v, error %.300q; want no report and one line containing %q", tc.name, rep, err, tc.want)
		}
	}
	// The inputs it needs, and files that are not there.
	e, l := writeFile(t, "e.ndjson", good+end), writeFile(t, "l.csv", "key\nk1\n")
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Ledger: l, LedgerKey: "key"}, "--export: required"},
		{Config{Export: e, LedgerKey: "key"}, "--ledger: required"},
		{Config{Export: e, Ledger: l}, "--ledger-key: required"},
		{Config{Export: e + ".missing", Ledger: l, LedgerKey: "key"}, "--export: open "},
		{Config{Export: e, Ledger: l + ".missing", LedgerKey: "key"}, "--ledger: open "},
	} {
		if _, err := Run(tc.c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v; want %q", tc.c, err, tc.want)
		}
	}
}
