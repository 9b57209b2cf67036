package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestExampleFileParses(t *testing.T) {
	f, err := Load("../cluster.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Nodes) != 3 || f.Nodes[1].API != "127.0.0.1:9002" {
		t.Fatalf("nodes = %+v", f.Nodes)
	}
	r := f.Routes[0]
	if r.Scope != "pay" || !*r.RequireKey || r.TTL.D() != 24*time.Hour || *r.MaxStoredBody != 1<<20 ||
		r.Token != "optional" || r.OnInFlight != "conflict" || len(r.ReleaseStatuses) != 2 ||
		r.Match != "exact" || r.TrailingSlash != "strict" {
		t.Fatalf("route = %+v", r)
	}
	if abs, _ := filepath.Abs("../data/n2"); f.DataDirFor("n2") != abs {
		t.Fatalf("DataDirFor(n2) = %q, want %q (beside the file)", f.DataDirFor("n2"), abs)
	}
	if f.Tokens.TTL.D() != 30*time.Minute {
		t.Fatalf("tokens.ttl = %s", f.Tokens.TTL.D())
	}
	if f.Limits.MaxResponseHeaderBytes != 0 {
		t.Fatalf("limits.max_response_header_bytes = %d, want it left to gateway's default", f.Limits.MaxResponseHeaderBytes)
	}
}

func TestDefault(t *testing.T) {
	f := Default()
	n, err := f.Node("n1")
	if err != nil || n.Listen != "127.0.0.1:8080" || n.API != "127.0.0.1:8081" || n.Raft != "127.0.0.1:8082" {
		t.Fatalf("default node = %+v, %v", n, err)
	}
	if f.DataDirFor("n1") != "./idemgate-data" {
		t.Fatalf("default data dir = %q", f.DataDirFor("n1"))
	}
}

const base = `nodes:
  - {id: n1, raft: "127.0.0.1:7001", api: "127.0.0.1:9001", listen: "127.0.0.1:8001"}
upstream: http://127.0.0.1:3000
`

func TestErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"empty", ``, "nodes"},
		{"unknown top field", base + "bogus: 1\n", "line 4: bogus: unknown field"},
		{"unknown route field", base + "routes:\n  - name: pay\n    path: /pay\n    colour: red\n", "line 7: routes[0].colour: unknown field"},
		{"no nodes", "upstream: http://x:1\n", "nodes: at least one"},
		{"bad node id", "nodes:\n  - {id: 'a b', raft: 127.0.0.1:1, api: 127.0.0.1:2, listen: 127.0.0.1:3}\n", "line 2: nodes[0].id: "},
		{"duplicate address", "nodes:\n  - {id: a, raft: 127.0.0.1:1, api: 127.0.0.1:1, listen: 127.0.0.1:3}\n", "nodes[0].api"},
		{"missing raft", "nodes:\n  - {id: a, api: 127.0.0.1:2, listen: 127.0.0.1:3}\n", "nodes[0].raft"},
		{"bad port", "nodes:\n  - {id: a, raft: 127.0.0.1:x, api: 127.0.0.1:2, listen: 127.0.0.1:3}\n", "bad port"},
		{"bad upstream", strings.Replace(base, "http://127.0.0.1:3000", "ftp://x", 1), "line 3: upstream: "},
		{"bad duration", base + "tokens:\n  ttl: forever\n", `line 5: tokens.ttl: "forever" is not a duration`},
		{"memory_limit too small", base + "memory_limit: 1MiB\n", "line 4: memory_limit: 1048576 is too small (minimum 64MiB"},
		{"memory_limit not a size", base + "memory_limit: -1\n", `line 4: memory_limit: "-1" is not a size`},
		{"bad size", base + "routes:\n  - name: pay\n    path: /pay\n    max_stored_body: lots\n", `"lots" is not a size`},
		{"bad policy", base + "routes:\n  - name: pay\n    path: /pay\n    on_in_flight: hope\n", "line 7: routes[0].on_in_flight: "},
		{"bad path", base + "routes:\n  - name: pay\n    path: pay\n", "line 6: routes[0].path: "},
		{"star mid path", base + "routes:\n  - name: pay\n    path: /a/*/b\n", "routes[0].path"},
		{"matrix parameter in path", base + "routes:\n  - name: pay\n    path: /pay;v=1\n", "line 6: routes[0].path: "},
		{"percent-encoding in path", base + "routes:\n  - name: pay\n    path: /p%61y\n", "routes[0].path"},
		{"dot segment in path", base + "routes:\n  - name: pay\n    path: /a/../pay\n", "routes[0].path"},
		{"duplicate slash in path", base + "routes:\n  - name: pay\n    path: //pay\n", "routes[0].path"},
		{"space in path", base + "routes:\n  - name: pay\n    path: /p ay\n", "routes[0].path"},
		{"bad match", base + "routes:\n  - name: pay\n    path: /pay\n    match: fuzzy\n", "line 7: routes[0].match: "},
		{"bad trailing_slash", base + "routes:\n  - name: pay\n    path: /pay\n    trailing_slash: maybe\n", "line 7: routes[0].trailing_slash: "},
		{"bad key source", base + "routes:\n  - name: pay\n    path: /pay\n    key: cookie:k\n", "routes[0].key"},
		{"bad tenant", base + "routes:\n  - name: pay\n    path: /pay\n    tenant: query:u\n", "routes[0].tenant"},
		{"bad status", base + "routes:\n  - name: pay\n    path: /pay\n    release_statuses: [42]\n", "routes[0].release_statuses[0]"},
		{"duplicate route", base + "routes:\n  - {name: a, path: /a}\n  - {name: a, path: /b}\n", "routes[1].name"},
		{"timeout over ttl", base + "routes:\n  - {name: a, path: /a, ttl: 1s, processing_timeout: 2s}\n", "routes[0].processing_timeout"},
		{"routes need upstream", "nodes:\n  - {id: a, raft: 127.0.0.1:1, api: 127.0.0.1:2, listen: 127.0.0.1:3}\nroutes:\n  - {name: a, path: /a}\n", "upstream"},
		{"response headers buffer too small", base + "limits:\n  max_response_header_bytes: 1KiB\n", "line 5: limits.max_response_header_bytes: "},
		{"response headers buffer too large", base + "limits:\n  max_response_header_bytes: 2MiB\n", "limits.max_response_header_bytes"},
		{"client buffer under two requests", base + "limits:\n  max_request_body: 4MiB\n  max_client_buffer: 6MiB\n", "limits.max_client_buffer: 6291456 is less than two max_request_body"},
		{"reconcile_id not json", base + "routes:\n  - {name: a, path: /a, reconcile_id: header:X-Charge}\n", "line 5: routes[0].reconcile_id: "},
		{"reconcile_id no pointer", base + "routes:\n  - {name: a, path: /a, reconcile_id: 'json:'}\n", "routes[0].reconcile_id"},
		{"reconcile_id bad pointer", base + "routes:\n  - {name: a, path: /a, reconcile_id: 'json:/a~2'}\n", "routes[0].reconcile_id"},
		{"reconcile_id relative", base + "routes:\n  - {name: a, path: /a, reconcile_id: 'json:charge'}\n", "routes[0].reconcile_id"},
		{"not yaml", "nodes: [", "config:"},
		{"raft timing unknown", base + "raft:\n  timing: wan\n", `line 5: raft.timing: "wan": want one of default, lan`},
		{"raft heartbeat tiny", base + "raft:\n  heartbeat_timeout: 5ms\n", "raft.heartbeat_timeout: 5ms is too small (minimum 10ms)"},
		{"raft election tiny", base + "raft:\n  election_timeout: 1ms\n", "raft.election_timeout: 1ms is too small"},
		{"apply commit every negative", base + "raft:\n  apply_commit_every: -1\n", "line 5: raft.apply_commit_every: -1: want 1 to 1048576 (0 or left out: the default)"},
		{"apply commit every huge", base + "raft:\n  apply_commit_every: 1048577\n", "raft.apply_commit_every: 1048577: want 1 to 1048576"},
		{"apply commit every not a number", base + "raft:\n  apply_commit_every: lots\n", "raft.apply_commit_every"},
		{"apply commit interval negative", base + "raft:\n  apply_commit_interval: -1s\n", "raft.apply_commit_interval"},
		{"apply commit interval huge", base + "raft:\n  apply_commit_interval: 2m\n", "raft.apply_commit_interval: 2m0s: want more than 0 and at most 1m (0 or left out: the default)"},
		{"raft election under heartbeat", base + "raft:\n  heartbeat_timeout: 2s\n  election_timeout: 1s\n", "raft.election_timeout: 1s is shorter than raft.heartbeat_timeout 2s"},
		{"once retention too short", base + "once:\n  retention: 1ms\n", "line 5: once.retention: "},
		{"once retention negative", base + "once:\n  retention: -1h\n", "once.retention"},
		{"once scope without a name", base + "once:\n  scopes:\n    - {retention: 1h}\n", "once.scopes[0].name"},
		{"once scope bad name", base + "once:\n  scopes:\n    - {name: 'a b', retention: 1h}\n", "once.scopes[0].name"},
		{"once scope twice", base + "once:\n  scopes:\n    - {name: sms, retention: 1h}\n    - {name: sms, retention: 2h}\n", "once.scopes[1].name"},
		{"once scope retention over a year", base + "once:\n  scopes:\n    - {name: sms, retention: 9000h}\n", "once.scopes[0].retention"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.yaml))
		if err == nil {
			t.Errorf("%s: Parse succeeded, want an error containing %q", tt.name, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error = %q, want one line containing %q", tt.name, err, tt.want)
		}
	}
}

// TestOnceRetention: a listed scope has its own retention, one listed
// without inherits once.retention, every other scope has the default.
func TestOnceRetention(t *testing.T) {
	f, err := Parse([]byte(base + "once:\n  scopes:\n    - {name: sms, retention: 168h}\n    - {name: jobs}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for scope, want := range map[string]time.Duration{"sms": 168 * time.Hour, "jobs": DefaultOnceRetention, "other": DefaultOnceRetention} {
		if got := f.Once.RetentionOf(scope); got != want {
			t.Errorf("RetentionOf(%q) = %s, want %s", scope, got, want)
		}
	}
	f, err = Parse([]byte(base + "once:\n  retention: 1h\n  scopes:\n    - {name: jobs}\n"))
	if err != nil || f.Once.RetentionOf("jobs") != time.Hour || f.Once.RetentionOf("x") != time.Hour {
		t.Fatalf("%v %+v", err, f.Once)
	}
	if got := (Once{}).RetentionOf("x"); got != DefaultOnceRetention {
		t.Fatalf("an unvalidated file's retention: %s", got)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1024": 1024, "1MiB": 1 << 20, "512KiB": 512 << 10, "1MB": 1e6, "2 GiB": 2 << 30} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1XB", "1.5MiB", "99999999999999999999"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) succeeded", in)
		}
	}
}

func FuzzParse(f *testing.F) {
	ex, _ := os.ReadFile("../cluster.example.yaml")
	f.Add(ex)
	f.Add([]byte(base))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		if len(cfg.Nodes) == 0 {
			t.Fatal("valid config without nodes")
		}
	})
}
