package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReconcileVerb: `idemgate reconcile` exits 0 on a clean day, 1 on a
// finding (the report on stdout, as JSON with --json), 2 on input it
// cannot trust, with one line per error on stderr and nothing on stdout
// (two when the failed run's metrics file cannot be written either).
// What a run finds is package reconcile's tests'.
func TestReconcileVerb(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	line := `{"scope":"pay","tenant":"","key":"k1","state":"completed","status_code":201,"created_at":"2026-01-02T10:00:00Z"}` + "\n"
	export := file("e.ndjson", line+`{"end":true,"records":1}`+"\n")
	cutOff := file("cut.ndjson", line)
	clean, twice := file("clean.csv", "key\nk1\n"), file("twice.csv", "key\nk1\nk1\n")
	foreign := file("other.prom", "this is { not the text format\n")
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		out        string // on stdout
		errs       []string
		jsonReport bool
	}{
		{"clean", []string{"--export", export, "--ledger", clean, "--ledger-key", "key"}, 0, "\nclean: ", nil, false},
		{"charged twice", []string{"--export", export, "--ledger", twice, "--ledger-key", "key"}, 1, "keys charged more than once: 1\n", nil, false},
		{"charged twice, JSON", []string{"--export", export, "--ledger", twice, "--ledger-key", "key", "--json"}, 1, `"charged_more_than_once"`, nil, true},
		{"cut off", []string{"--export", cutOff, "--ledger", clean, "--ledger-key", "key"}, 2, "", []string{"no end line"}, false},
		{"no export", []string{"--ledger", clean, "--ledger-key", "key"}, 2, "", []string{"--export: required"}, false},
		{"bad window", []string{"--export", export, "--ledger", clean, "--ledger-key", "key", "--window", "-1s"}, 2, "", []string{"--window: -1s is negative"}, false},
		{"not .prom", []string{"--export", export, "--ledger", clean, "--ledger-key", "key", "--metrics-file", filepath.Join(dir, "r.txt")}, 2, "",
			[]string{"want a file name ending in .prom"}, false},
		{"cut off, another job's file", []string{"--export", cutOff, "--ledger", clean, "--ledger-key", "key", "--metrics-file", foreign}, 2, "",
			[]string{"no end line", "other.prom is not a metrics file (left as it is)"}, false},
	} {
		code, out, errOut := runArgs(append([]string{"reconcile"}, tc.args...)...)
		if code != tc.code || !strings.Contains(out, tc.out) || (tc.out == "" && out != "") {
			t.Errorf("%s: exit %d, stdout %q; want %d and %q", tc.name, code, out, tc.code, tc.out)
		}
		lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
		if errOut == "" {
			lines = nil
		}
		if len(lines) != len(tc.errs) {
			t.Errorf("%s: stderr %q; want %d lines", tc.name, errOut, len(tc.errs))
			continue
		}
		for i, want := range tc.errs {
			if !strings.HasPrefix(lines[i], "idemgate reconcile: ") || !strings.Contains(lines[i], want) {
				t.Errorf("%s: stderr line %d %q; want %q after the prefix", tc.name, i+1, lines[i], want)
			}
		}
		if tc.jsonReport {
			var rep struct {
				Records int  `json:"records"`
				Clean   bool `json:"clean"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Records != 1 || rep.Clean {
				t.Errorf("%s: %+v, %v; want a JSON report of 1 record, not clean", tc.name, rep, err)
			}
		}
	}
}
