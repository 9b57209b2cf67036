package config_test

// docs/config.md is checked against the code both ways: every field of
// config.File (by its yaml tags) has a row, every row is a field, the type
// column matches the Go type, and the defaults of durations, sizes, counts
// and switches are the code's.

import (
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/gateway"
	"github.com/idemgate/idemgate/jwtauth"
	"github.com/idemgate/idemgate/node"
	"github.com/idemgate/idemgate/raftstore"
	"github.com/idemgate/idemgate/resp"
	"github.com/idemgate/idemgate/tracing"
	"github.com/idemgate/idemgate/ttl"
)

const reference = "../docs/config.md"

type row struct{ field, typ, def string }

// referenceRows are the rows of the reference's field table.
func referenceRows(t *testing.T) map[string]row {
	data, err := os.ReadFile(reference)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]row{}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) != 6 {
			t.Fatalf("%s: row %q: want 4 columns (field, type, default, meaning)", reference, line)
		}
		r := row{field: strings.Trim(strings.TrimSpace(cells[1]), "`"), typ: strings.TrimSpace(cells[2]), def: strings.Trim(strings.TrimSpace(cells[3]), "`")}
		if _, dup := rows[r.field]; dup {
			t.Errorf("%s: %s has two rows", reference, r.field)
		}
		rows[r.field] = r
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no field table found", reference)
	}
	return rows
}

var (
	durationType = reflect.TypeFor[config.Duration]()
	sizeType     = reflect.TypeFor[config.Size]()
)

// codeFields walks t's yaml tags: a nested struct's fields are "a.b", a
// list of structs' "a[].b"; durations, sizes and lists of scalars are
// leaves. The value is the field's Go type.
func codeFields(t reflect.Type, prefix string, out map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		path := prefix + name
		ft := f.Type
		out[path] = ft
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			codeFields(ft, path+".", out)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			codeFields(ft.Elem(), path+"[].", out)
		}
	}
}

// typeWord is the reference's type column for a Go type.
func typeWord(t reflect.Type) []string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		return []string{"duration"}
	case t == sizeType:
		return []string{"size"}
	case t.Kind() == reflect.Bool:
		return []string{"bool"}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return []string{"integer"}
	case t.Kind() == reflect.String:
		return []string{"string", "path", "host:port", "URL"}
	case t.Kind() == reflect.Float64:
		return []string{"number"}
	case t.Kind() == reflect.Struct:
		return []string{"mapping"}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		return []string{"list"}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return []string{"list of strings"}
	case t.Kind() == reflect.Slice && t.Elem().Kind() >= reflect.Int && t.Elem().Kind() <= reflect.Uint64:
		return []string{"list of integers"}
	}
	return []string{t.String()}
}

func TestReferenceListsEveryField(t *testing.T) {
	rows := referenceRows(t)
	fields := map[string]reflect.Type{}
	codeFields(reflect.TypeFor[config.File](), "", fields)
	for path, typ := range fields {
		r, ok := rows[path]
		if !ok {
			t.Errorf("%s is a field of the cluster file but has no row in %s", path, reference)
			continue
		}
		if words := typeWord(typ); !contains(words, r.typ) {
			t.Errorf("%s: %s says type %q, the code's is %s (want one of %q)", path, reference, r.typ, typ, words)
		}
	}
	for path := range rows {
		if _, ok := fields[path]; !ok {
			t.Errorf("%s has a row in %s but is not a field of the cluster file", path, reference)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// packageDefaults are the defaults of fields the config layer leaves zero
// for the package that owns them to fill (node.Start applies them).
func packageDefaults() map[string]int64 {
	rc, g, sc, rs := raftstore.DefaultConfig(), gateway.DefaultConfig(), ttl.DefaultSweeperConfig(), resp.DefaultConfig()
	jc, tc := jwtauth.DefaultConfig(), tracing.DefaultConfig()
	return map[string]int64{
		"jwt.leeway":                       int64(jc.Leeway),
		"jwt.fetch_timeout":                int64(jc.FetchTimeout),
		"jwt.refresh":                      int64(jc.Refresh),
		"jwt.min_refetch":                  int64(jc.MinRefetch),
		"jwt.max_keys_size":                jc.MaxKeysBytes,
		"expiry.interval":                  int64(sc.Interval),
		"expiry.batch_size":                int64(sc.BatchSize),
		"expiry.max_batches":               int64(sc.MaxBatches),
		"expiry.backlog_pause":             int64(sc.Pause),
		"raft.heartbeat_timeout":           int64(rc.HeartbeatTimeout),
		"raft.election_timeout":            int64(rc.ElectionTimeout),
		"raft.snapshot_threshold":          int64(rc.SnapshotThreshold),
		"raft.snapshot_interval":           int64(rc.SnapshotInterval),
		"raft.apply_timeout":               int64(rc.ApplyTimeout),
		"raft.min_free":                    int64(rc.MinFreeBytes),
		"raft.max_clock_jump":              int64(rc.MaxClockJump),
		"raft.apply_commit_every":          int64(rc.ApplyCommitEvery),
		"raft.apply_commit_interval":       int64(rc.ApplyCommitInterval),
		"limits.read_timeout":              int64(g.ReadTimeout),
		"limits.write_timeout":             int64(g.WriteTimeout),
		"limits.idle_timeout":              int64(g.IdleTimeout),
		"limits.max_request_body":          int64(g.MaxRequestBody),
		"limits.max_header_bytes":          int64(g.MaxHeaderBytes),
		"limits.max_conns_per_ip":          int64(g.MaxConnsPerIP),
		"limits.concurrency":               int64(g.Concurrency),
		"limits.upstream_timeout":          int64(g.UpstreamTimeout),
		"limits.upstream_conns":            int64(g.UpstreamConns),
		"limits.max_response_body":         int64(g.MaxResponseBody),
		"limits.max_response_header_bytes": int64(g.MaxResponseHeaderBytes),
		"memory_limit":                     node.DefaultMemoryLimit,
		"scripts.cache":                    rs.ScriptCache,
		"scripts.max_size":                 rs.MaxScriptSize,
		"scripts.queue_wait":               int64(rs.ScriptQueueWait),
		"scripts.max_keys":                 int64(rs.MaxScriptKeys),
		"tracing.queue_size":               int64(tc.QueueSize),
		"tracing.batch_size":               int64(tc.BatchSize),
		"tracing.batch_timeout":            int64(tc.BatchTimeout),
		"tracing.export_timeout":           int64(tc.ExportTimeout),
	}
}

// TestRedisFaceLimitDefaults: the limits: the Redis face shares with the
// HTTP listeners default as theirs, as the reference says; node.Start
// gives it the file's.
func TestRedisFaceLimitDefaults(t *testing.T) {
	want, rc := packageDefaults(), resp.DefaultConfig()
	for path, got := range map[string]int64{
		"limits.idle_timeout":     int64(rc.IdleTimeout),
		"limits.read_timeout":     int64(rc.ReadTimeout),
		"limits.write_timeout":    int64(rc.WriteTimeout),
		"limits.max_conns_per_ip": int64(rc.MaxConnsPerIP),
		"limits.max_request_body": int64(rc.MaxBulk),
	} {
		if got != want[path] {
			t.Errorf("resp.DefaultConfig's %s = %d, the other listeners' %d", path, got, want[path])
		}
	}
}

// minimal is a file that leaves out everything it can, with one route and
// one token: what config fills in is its default.
const minimal = `nodes: [{id: n1, raft: "127.0.0.1:7001", api: "127.0.0.1:9001", listen: "127.0.0.1:8001"}]
upstream: http://127.0.0.1:3000
routes: [{name: r, path: /r}]
`

// valueAt reads the field at a reference path in f ("routes[].ttl": the
// first route's).
func valueAt(f *config.File, path string) reflect.Value {
	v := reflect.ValueOf(f).Elem()
	for _, part := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(part, "[]")
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}
			}
			v = v.Elem()
		}
		idx := -1
		for i := 0; i < v.NumField(); i++ {
			if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ","); tag == name {
				idx = i
			}
		}
		if idx < 0 {
			return reflect.Value{}
		}
		v = v.Field(idx)
		if list {
			if v.Len() == 0 {
				return reflect.Value{}
			}
			v = v.Index(0)
		}
	}
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	return v
}

var numberRe = regexp.MustCompile(`^[0-9]`)

// TestReferenceDefaults: the default column of every duration, size,
// integer and bool field is the code's default.
func TestReferenceDefaults(t *testing.T) {
	f, err := config.Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	owned := packageDefaults()
	fields := map[string]reflect.Type{}
	codeFields(reflect.TypeFor[config.File](), "", fields)
	checked := 0
	for path, r := range referenceRows(t) {
		typ, ok := fields[path]
		if !ok {
			continue // TestReferenceListsEveryField names it
		}
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		v := valueAt(f, path)
		if typ.Kind() == reflect.Bool {
			if !v.IsValid() || strconv.FormatBool(v.Bool()) != r.def {
				t.Errorf("%s: %s says default %q, the code's is %v", path, reference, r.def, v)
			}
			checked++
			continue
		}
		if typ != durationType && typ != sizeType && (typ.Kind() < reflect.Int || typ.Kind() > reflect.Uint64) {
			continue
		}
		var code int64
		switch {
		case v.IsValid() && v.CanInt() && v.Int() != 0:
			code = v.Int()
		case v.IsValid() && v.CanUint() && v.Uint() != 0:
			code = int64(v.Uint())
		default:
			code = owned[path]
		}
		doc, err := parseDefault(typ, r.def)
		switch {
		case code == 0 && err == nil:
			t.Errorf("%s: %s says default %q, the code has none (a default derived or absent is written in words)", path, reference, r.def)
		case code != 0 && err != nil:
			t.Errorf("%s: %s says default %q, want the code's %s", path, reference, r.def, format(typ, code))
		case code != 0 && doc != code:
			t.Errorf("%s: %s says default %q, the code's is %s", path, reference, r.def, format(typ, code))
		}
		if code != 0 {
			checked++
		}
	}
	if checked < 25 {
		t.Fatalf("checked %d defaults, want every duration, size, integer and bool (25 or more)", checked)
	}
}

func parseDefault(typ reflect.Type, s string) (int64, error) {
	if !numberRe.MatchString(s) {
		return 0, strconv.ErrSyntax
	}
	switch typ {
	case durationType:
		d, err := time.ParseDuration(s)
		return int64(d), err
	case sizeType:
		return config.ParseSize(s)
	}
	return strconv.ParseInt(s, 10, 64)
}

func format(typ reflect.Type, v int64) string {
	if typ == durationType {
		return time.Duration(v).String()
	}
	return strconv.FormatInt(v, 10)
}

// TestReferenceEmbeddedDefault: the file the reference shows for serve
// without --config is the one serve runs.
func TestReferenceEmbeddedDefault(t *testing.T) {
	data, err := os.ReadFile(reference)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "## Without `--config`")
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("%s: no yaml block under \"## Without `--config`\"", reference)
	}
	doc, err := config.Parse([]byte(block))
	if err != nil {
		t.Fatalf("%s: the embedded default as shown: %v", reference, err)
	}
	def := config.Default()
	if !reflect.DeepEqual(doc.Nodes, def.Nodes) || doc.DataDir != def.DataDir || doc.Upstream != def.Upstream ||
		!reflect.DeepEqual(doc.Routes, def.Routes) {
		t.Fatalf("%s shows\n%+v %q %q %+v\nserve runs\n%+v %q %q %+v", reference,
			doc.Nodes, doc.DataDir, doc.Upstream, doc.Routes, def.Nodes, def.DataDir, def.Upstream, def.Routes)
	}
}
