package config_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A default of the cluster file is written once, in the reference's table
// (which TestReferenceDefaults holds to the code): README and the other
// docs/ pages link to it instead of repeating the value, which would go
// stale when the code's default moves.

// plainDefault is a default a page could repeat word for word: a number,
// a duration, a size, a word ("reject"), not a phrase ("the name").
var plainDefault = regexp.MustCompile(`^[A-Za-z0-9.]+$`)

// statedDefaults returns the places in text that give a field's default
// from rows: "`raft.min_free` (64 MiB)", "`interval` (1s) between",
// "`min_free`: below it, 64MiB by default", "`match: …` (…; default
// `exact`)". A field named by its whole path or by its last part counts.
func statedDefaults(text string, rows map[string]row) []string {
	var found []string
	for field, r := range rows {
		if !plainDefault.MatchString(r.def) {
			continue
		}
		values := []string{regexp.QuoteMeta(r.def)}
		if m := regexp.MustCompile(`^(\d+)([KMG]i?B)$`).FindStringSubmatch(r.def); m != nil {
			values = append(values, m[1]+" "+m[2]) // 64MiB written 64 MiB
		}
		value := "(?:" + strings.Join(values, "|") + ")"
		names := []string{regexp.QuoteMeta(field)}
		if i := strings.LastIndex(field, "."); i >= 0 {
			names = append(names, regexp.QuoteMeta(field[i+1:]))
		}
		name := "(?:" + strings.Join(names, "|") + ")"
		for _, pattern := range []string{
			"`" + name + "` \\((?:default:? )?`?" + value + "`?[,;)]",
			"`" + name + "`[^.`]{0,60}\\b" + value + " by default",
			"`" + name + "(?::[^`]*)?`[^.]{0,80}; default `" + value + "`",
		} {
			for _, m := range regexp.MustCompile(pattern).FindAllString(text, -1) {
				found = append(found, field+": "+m)
			}
		}
	}
	return found
}

func TestDefaultsWrittenOnce(t *testing.T) {
	rows := referenceRows(t)
	pages, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join("..", "README.md"))
	checked := 0
	for _, p := range pages {
		if filepath.Clean(p) == filepath.Clean(reference) {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, s := range statedDefaults(strings.Join(strings.Fields(string(b)), " "), rows) {
			t.Errorf("%s repeats a default of %s: %q; link to the reference instead", p, reference, s)
		}
	}
	if checked < 5 {
		t.Fatalf("checked %d pages: the README and docs/ pages were not found", checked)
	}
}

// TestStatedDefaults checks the detector on the sentences the README once
// held, and on ones that name a value that is not the default.
func TestStatedDefaults(t *testing.T) {
	rows := map[string]row{
		"expiry.interval":                  {def: "1s"},
		"raft.min_free":                    {def: "64MiB"},
		"limits.max_response_header_bytes": {def: "64KiB"},
		"routes[].match":                   {def: "exact"},
		"routes[].scope":                   {def: "the name"},
		"expiry.batch_size":                {def: "256"},
	}
	for _, tc := range []struct {
		text  string
		found int
	}{
		{"`interval` (1s) between sweeps when nothing is left", 1},
		{"below `raft.min_free` (64 MiB) writes are refused", 1},
		{"`min_free`: below it, 64MiB by default, a node refuses writes", 1},
		{"`max_response_header_bytes` (64KiB, 4KiB to 1MiB: the upstream's", 1},
		{"`match: case-insensitive` (path and method in any case; default `exact`) and", 1},
		{"`interval` (1s), `batch_size` (256)", 2},
		{"with `batch_size: 1024` kept up", 0},
		{"below `raft.min_free` writes are refused", 0},
		{"`scope` (the name)", 0},
		{"`interval` (10ms) is too short", 0},
	} {
		if got := statedDefaults(tc.text, rows); len(got) != tc.found {
			t.Errorf("statedDefaults(%q) = %q, want %d", tc.text, got, tc.found)
		}
	}
}
