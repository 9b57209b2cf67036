package e2e

// deploy/grafana-dashboard.json kept true: every query names only metrics a
// node exports, with label values it has series for.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboardQueries reads the dashboard: every panel has a title, a unique
// id, a place on the grid no other panel takes, the data source variable
// and at least one query; it returns every PromQL expression, those of the
// template variables included.
func dashboardQueries(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title      string            `json:"title"`
		UID        string            `json:"uid"`
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if dash.Title == "" || dash.UID == "" {
		t.Errorf("%s: want a title and a uid", path)
	}
	var exprs []string
	ids := map[int]bool{}
	type rect struct{ X, Y, W, H int }
	var placed []rect
	type panel struct {
		ID         int                  `json:"id"`
		Type       string               `json:"type"`
		Title      string               `json:"title"`
		GridPos    rect                 `json:"gridPos"`
		Datasource struct{ UID string } `json:"datasource"`
		Panels     []json.RawMessage    `json:"panels"`
		Targets    []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var walk func([]json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("%s: panel %s: %v", path, r, err)
			}
			if p.Title == "" || ids[p.ID] {
				t.Errorf("%s: panel %d (%q): want a title and an id of its own", path, p.ID, p.Title)
			}
			ids[p.ID] = true
			g := p.GridPos
			if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
				t.Errorf("%s: panel %q: gridPos %+v is off the 24-column grid", path, p.Title, g)
			}
			for _, o := range placed {
				if g.X < o.X+o.W && o.X < g.X+g.W && g.Y < o.Y+o.H && o.Y < g.Y+g.H {
					t.Errorf("%s: panel %q at %+v overlaps another at %+v", path, p.Title, g, o)
				}
			}
			placed = append(placed, g)
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Datasource.UID != "${datasource}" {
				t.Errorf("%s: panel %q: datasource %q, want the dashboard's ${datasource} variable", path, p.Title, p.Datasource.UID)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", path, p.Title)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("%s: panel %q has an empty query", path, p.Title)
				}
				exprs = append(exprs, tg.Expr)
			}
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			if s, ok := q["query"].(string); ok {
				exprs = append(exprs, s)
			}
		}
	}
	if len(exprs) < 20 {
		t.Fatalf("%s: read only %d queries", path, len(exprs))
	}
	return exprs
}

// promName finds the metric names of an expression: idemgate's, and the
// Go and process collectors'.
var promName = regexp.MustCompile(`\b(?:idemgate|go|process)_[a-z0-9_]+`)

// TestDashboardNamesExportedMetrics starts a 3-node cluster
// (freshNodeMetrics) and holds every query of
// deploy/grafana-dashboard.json against a node's /metrics: each metric it
// names has series there, or (a labelled family that has seen no event
// yet) is registered on the node's registry; each label value a query
// matches on (outcome="replayed") has a series from the start, for every
// route. The Prometheus labels job and instance are the scraper's.
func TestDashboardNamesExportedMetrics(t *testing.T) {
	path := filepath.Join("deploy", "grafana-dashboard.json")
	exprs := dashboardQueries(t, path)
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	families, registered, routes := freshNodeMetrics(t)

	var names, unscraped []string
	for _, e := range exprs {
		for _, n := range promName.FindAllString(e, -1) {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	for _, n := range names {
		base := histogramSuffix.ReplaceAllString(n, "")
		switch {
		case families[n] != nil || families[base] != nil:
		case registered[n] || registered[base]:
			unscraped = append(unscraped, n)
		default:
			t.Errorf("%s names %s, which a node does not export", path, n)
		}
	}
	t.Logf("%d queries name %d metrics; registered but without series on a fresh node: %v", len(exprs), len(names), unscraped)

	// Label values the queries match on.
	for _, e := range exprs {
		for _, sel := range parseSelectors(t, path, e) {
			delete(sel.labels, "job")
			delete(sel.labels, "instance")
			if len(sel.labels) == 0 {
				continue
			}
			f := families[histogramSuffix.ReplaceAllString(sel.name, "")]
			if f == nil {
				t.Errorf("%s: %s matches labels %v, and a fresh node has no %s series", path, sel.name, sel.labels, sel.name)
				continue
			}
			for label, values := range sel.labels {
				for _, v := range values {
					for _, r := range routes {
						want := map[string]string{label: v}
						if f.GetName() == "idemgate_requests_total" || f.GetName() == "idemgate_request_duration_seconds" {
							want["route"] = r
						}
						if !hasSeries(f, want) {
							t.Errorf("%s: %s{%s=%q}: a fresh node has no such series (%v)", path, sel.name, label, v, want)
						}
					}
				}
			}
		}
	}
}
