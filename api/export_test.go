package api

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/auth"
	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/internal/testcluster"
)

// startExportAPI starts one API listener over m with the routes'
// reconcile_id options ids.
func startExportAPI(t testing.TB, m *memstore.Store, ids map[string][]string, access *auth.Access) string {
	t.Helper()
	ac := &apiCluster{reconcile: ids}
	ac.serve(t, m, prometheus.NewRegistry(), access)
	return ac.urls[0]
}

// record writes one record through the store: begun, and completed with
// status and body unless status is 0.
func record(t *testing.T, m *memstore.Store, scope, tenant, key string, status int, body string, dropped bool) {
	t.Helper()
	ctx := context.Background()
	fp := sha256.Sum256([]byte(scope + tenant + key))
	rk := command.RecordKey(scope, tenant, key)
	res, err := m.Begin(ctx, command.BeginRequest{Key: rk, Fingerprint: fp[:], TTL: time.Hour, Timeout: time.Hour})
	if err != nil || res.Code != command.CodeCreated {
		t.Fatalf("begin %q: %v %v", rk, res, err)
	}
	if status == 0 {
		return
	}
	if err := m.Complete(ctx, command.CompleteRequest{Key: rk, Fence: res.Fence, Status: status, Body: []byte(body), BodyDropped: dropped}); err != nil {
		t.Fatalf("complete %q: %v", rk, err)
	}
}

// readExport splits an export into its record lines and its end line,
// failing on any line that is not one JSON object the types describe.
func readExport(t *testing.T, body string) ([]ExportLine, ExportEnd) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	var out []ExportLine
	for _, l := range lines[:len(lines)-1] {
		var x ExportLine
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&x); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, x)
	}
	var end ExportEnd
	dec := json.NewDecoder(strings.NewReader(lines[len(lines)-1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&end); err != nil || !strings.HasSuffix(body, "\n") {
		t.Fatalf("end line %q: %v", lines[len(lines)-1], err)
	}
	return out, end
}

// TestRecordsExport: the export lists exactly the records begun in the
// window, of the scope and tenant asked, with the reconcile id the route
// names when the stored response has one, and ends with its count.
func TestRecordsExport(t *testing.T) {
	t.Parallel()
	m := memstore.New(t)
	u := startExportAPI(t, m, map[string][]string{"pay": {"json:/charge"}, "orders": {"json:/nope", "json:/data/0/id"}}, nil)
	before := time.Now().Add(-time.Second)
	record(t, m, "old", "", "o0", 201, `{"charge":"ch_old"}`, false)
	mid := time.Now()
	record(t, m, "pay", "", "k1", 201, `{"charge":"ch_1","amount":10}`, false)
	record(t, m, "pay", "t1", "k2", 200, `{"charge":42}`, false)
	record(t, m, "pay", "", "k3", 0, "", false)                           // in flight
	record(t, m, "pay", "", "k4", 201, `not json {"charge":"x"}`, false)  // no id
	record(t, m, "pay", "", "k5", 201, "", true)                          // body not stored
	record(t, m, "pay", "", "k6", 402, `{"charge":{"id":"ch_6"}}`, false) // an object is no id
	record(t, m, "orders", "", "o1", 201, `{"data":[{"id":"or_1"}]}`, false)
	record(t, m, "refunds", "", "r1", 201, `{"charge":"ch_r"}`, false) // no reconcile_id on its route
	after := time.Now().Add(time.Second)

	q := func(extra string) string {
		return u + "/v1/records/export?since=" + url.QueryEscape(mid.Format(time.RFC3339Nano)) +
			"&until=" + url.QueryEscape(after.Format(time.RFC3339Nano)) + extra
	}
	type row struct {
		scope, tenant, key, state string
		status                    int
		id                        string
	}
	got := func(extra string) ([]row, ExportEnd) {
		t.Helper()
		r := do(t, "GET", q(extra), "")
		if r.Status != 200 || r.Header.Get("Content-Type") != "application/x-ndjson" {
			t.Fatalf("export%s = %d %s %.300s", extra, r.Status, r.Header.Get("Content-Type"), r.Body)
		}
		lines, end := readExport(t, r.Body)
		var out []row
		for _, l := range lines {
			if len(l.Fingerprint) != 64 || l.CreatedAt == "" || (l.State == "completed") != (l.CompletedAt != "") {
				t.Errorf("line %+v: want a fingerprint, a creation time, and a completion time when completed", l)
			}
			out = append(out, row{l.Scope, l.Tenant, l.Key, l.State, l.StatusCode, l.ReconcileID})
		}
		if !end.End || end.Error != "" || end.Records != int64(len(lines)) {
			t.Errorf("export%s: end %+v after %d lines", extra, end, len(lines))
		}
		return out, end
	}
	all := []row{
		{"orders", "", "o1", "completed", 201, "or_1"},
		{"pay", "", "k1", "completed", 201, "ch_1"},
		{"pay", "", "k3", "in_flight", 0, ""},
		{"pay", "", "k4", "completed", 201, ""},
		{"pay", "", "k5", "completed", 201, ""},
		{"pay", "", "k6", "completed", 402, ""},
		{"pay", "t1", "k2", "completed", 200, "42"},
		{"refunds", "", "r1", "completed", 201, ""},
	}
	for _, tc := range []struct {
		extra string
		want  []row
	}{
		{"", all},
		{"&scope=pay", all[1:7]},
		{"&scope=pay&tenant=", all[1:6]},
		{"&scope=pay&tenant=t1", all[6:7]},
		{"&scope=pay&tenant=t2", nil},
		{"&scope=nosuch", nil},
		{"&scope=pa", nil}, // a prefix of a scope is not that scope
		{"&consistency=local&scope=orders", all[:1]},
	} {
		if rows, _ := got(tc.extra); !slices.Equal(rows, tc.want) {
			t.Errorf("export%s:\n got %v\nwant %v", tc.extra, rows, tc.want)
		}
	}
	// The window is of creation times: the record begun before mid is in
	// only a window that starts before it.
	r := do(t, "GET", u+"/v1/records/export?scope=old&since="+url.QueryEscape(before.Format(time.RFC3339Nano))+"&until="+url.QueryEscape(mid.Format(time.RFC3339Nano)), "")
	if lines, end := readExport(t, r.Body); len(lines) != 1 || lines[0].Key != "o0" || !end.End {
		t.Errorf("the window before mid: %v %+v", lines, end)
	}
	if h := do(t, "HEAD", q(""), ""); h.Status != 200 || h.Body != "" || h.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Errorf("HEAD = %d %q %q", h.Status, h.Header.Get("Content-Type"), h.Body)
	}
}

// TestRecordsExportRefuses: every bad request gets its problem, before
// anything is streamed; a read token may not export.
func TestRecordsExportRefuses(t *testing.T) {
	t.Parallel()
	m := memstore.New(t)
	record(t, m, "pay", "", "k1", 201, `{"charge":"ch_1"}`, false)
	u := startExportAPI(t, m, nil, testAccess(t, []string{}))
	const w = "since=2026-01-01T00:00:00Z&until=2099-01-01T00:00:00Z"
	admin := bearer(adminSecret)
	for _, tc := range []struct {
		name, method, query string
		hdr                 []string
		status              int
		problem             string
	}{
		{"no since", "GET", "until=2099-01-01T00:00:00Z", admin, 400, "bad-request"},
		{"no until", "GET", "since=2026-01-01T00:00:00Z", admin, 400, "bad-request"},
		{"since not a time", "GET", "since=yesterday&until=2099-01-01T00:00:00Z", admin, 400, "bad-request"},
		{"a date only", "GET", "since=2026-01-01&until=2099-01-01T00:00:00Z", admin, 400, "bad-request"},
		{"no zone", "GET", "since=2026-01-01T00:00:00&until=2099-01-01T00:00:00Z", admin, 400, "bad-request"},
		{"until huge", "GET", "since=2026-01-01T00:00:00Z&until=" + strings.Repeat("9", 5000), admin, 400, "bad-request"},
		{"since after until", "GET", "since=2099-01-01T00:00:00Z&until=2026-01-01T00:00:00Z", admin, 400, "bad-request"},
		{"since equals until", "GET", "since=2026-01-01T00:00:00Z&until=2026-01-01T00:00:00Z", admin, 400, "bad-request"},
		{"empty scope", "GET", w + "&scope=", admin, 400, "invalid-scope"},
		{"scope with a space", "GET", w + "&scope=a%20b", admin, 400, "invalid-scope"},
		{"scope with a NUL", "GET", w + "&scope=pay%00", admin, 400, "invalid-scope"},
		{"scope with a slash", "GET", w + "&scope=a/b", admin, 400, "invalid-scope"},
		{"scope too long", "GET", w + "&scope=" + strings.Repeat("s", 65), admin, 400, "invalid-scope"},
		{"tenant without scope", "GET", w + "&tenant=t1", admin, 400, "bad-request"},
		{"tenant with a NUL", "GET", w + "&scope=pay&tenant=t%001", admin, 400, "invalid-key"},
		{"consistency unknown", "GET", w + "&consistency=eventual", admin, 400, "bad-request"},
		{"POST", "POST", w, admin, 405, "method-not-allowed"},
		{"no token", "GET", w, nil, 401, "unauthorized"},
		{"a read token", "GET", w, bearer(readSecret), 403, "forbidden"},
		{"an app token", "GET", w, bearer(appSecret), 403, "forbidden"},
	} {
		r := do(t, tc.method, u+"/v1/records/export?"+tc.query, "", tc.hdr...)
		if r.Status != tc.status || r.ProblemType(t) != tc.problem {
			t.Errorf("%s: %s = %d %.200s, want %d %s", tc.name, tc.method, r.Status, r.Body, tc.status, tc.problem)
		}
		if strings.Contains(r.Body, "ch_1") || strings.Contains(r.Body, "k1") {
			t.Errorf("%s: the refusal leaks a record: %.200s", tc.name, r.Body)
		}
	}
	// The admin's export has the record; the single-record read is still a read token's.
	if r := do(t, "GET", u+"/v1/records/export?"+w, "", admin...); r.Status != 200 || !strings.Contains(r.Body, `"key":"k1"`) {
		t.Errorf("admin export = %d %.200s", r.Status, r.Body)
	}
	if r := do(t, "GET", u+"/v1/records/pay/k1", "", bearer(readSecret)...); r.Status != 200 {
		t.Errorf("GET /v1/records/pay/k1 with a read token = %d", r.Status)
	}
}

// TestRecordsExportBoundedMemory: an export of many records is streamed
// (a chunk of records per read transaction, written as it goes): the
// heap grows by far less than the export's size while the client reads it
// all. Not parallel: the heap is the process's.
func TestRecordsExportBoundedMemory(t *testing.T) {
	const n = 200_000
	theContract.pause(t) // the check reads a streamed answer whole
	m := memstore.New(t)
	u := startExportAPI(t, m, map[string][]string{"pay": {"json:/charge"}}, nil)
	start := time.Now().Add(-time.Second)
	cmds := make([]*command.Command, n)
	for i := range cmds {
		fp := sha256.Sum256([]byte{byte(i), byte(i >> 8), byte(i >> 16)})
		cmds[i] = command.RecordBeginCommand(command.BeginRequest{Key: command.RecordKey("pay", "", fmt.Sprintf("key-%07d", i)), Fingerprint: fp[:], TTL: time.Hour})
	}
	res, err := m.ApplyMany(cmds)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cmds {
		cmds[i] = command.RecordCompleteCommand(command.CompleteRequest{Key: command.RecordKey("pay", "", fmt.Sprintf("key-%07d", i)), Fence: res[i].Fence,
			Status: 201, Body: []byte(fmt.Sprintf(`{"charge":"ch_%07d","amount":1000,"currency":"eur","padding":"%0200d"}`, i, 0))})
	}
	if _, err := m.ApplyMany(cmds); err != nil {
		t.Fatal(err)
	}
	cmds, res = nil, nil
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc

	resp, err := http.Get(u + "/v1/records/export?since=" + url.QueryEscape(start.Format(time.RFC3339Nano)) + "&until=2099-01-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	lines, size := 0, 0
	var last string
	for sc.Scan() {
		lines++
		size += len(sc.Bytes()) + 1
		if lines%10_000 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
		if lines == n/2 && !strings.Contains(sc.Text(), fmt.Sprintf(`"reconcile_id":"ch_%07d"`, n/2-1)) {
			t.Errorf("line %d: %s", lines, sc.Text())
		}
		last = sc.Text()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if lines != n+1 || last != fmt.Sprintf(`{"end":true,"records":%d}`, n) {
		t.Fatalf("export: %d lines, the last %q; want %d records and the end line", lines, last, n)
	}
	grew := int64(peak) - int64(base)
	t.Logf("export of %d records, %d MiB: the heap grew by at most %.1f MiB", n, size>>20, float64(grew)/(1<<20))
	// Generous: the heap is sampled while a GC may be behind; building the
	// export whole would grow it by the whole export (over twice this).
	const bound = 24 << 20
	if size < 2*bound {
		t.Fatalf("the export is %d bytes: too small to tell streaming from building it whole", size)
	}
	if grew > bound {
		t.Errorf("the heap grew by %d MiB during an export of %d MiB, want under %d MiB", grew>>20, size>>20, bound>>20)
	}
}

// TestRecordsExportCluster: on a 3-node Raft cluster every node exports
// the same records, a follower's export included the record the leader
// completed just before it was asked (its barrier), with the reconcile id
// the route names.
func TestRecordsExportCluster(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, nil)
	ac := &apiCluster{c: c, reconcile: map[string][]string{"pay": {"json:/charge"}}}
	for _, s := range c.Stores {
		ac.serve(t, s, prometheus.NewRegistry(), nil)
	}
	leader := c.WaitLeader(10 * time.Second)
	ctx := context.Background()
	s := c.Stores[leader]
	since := time.Now().Add(-time.Minute).Format(time.RFC3339Nano)
	for i, node := range []int{(leader + 1) % 3, (leader + 2) % 3, leader} {
		key := fmt.Sprintf("k%d", i)
		fp := sha256.Sum256([]byte(key))
		rk := command.RecordKey("pay", "", key)
		res, err := s.Begin(ctx, command.BeginRequest{Key: rk, Fingerprint: fp[:], TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(ctx, command.CompleteRequest{Key: rk, Fence: res.Fence, Status: 201, Body: []byte(`{"charge":"ch_` + key + `"}`)}); err != nil {
			t.Fatal(err)
		}
		r := do(t, "GET", ac.urls[node]+"/v1/records/export?scope=pay&since="+url.QueryEscape(since)+"&until=2099-01-01T00:00:00Z", "")
		lines, end := readExport(t, r.Body)
		if r.Status != 200 || !end.End || len(lines) != i+1 {
			t.Fatalf("node %d after %d records: %d, %d lines, end %+v", node, i+1, r.Status, len(lines), end)
		}
		if l := lines[i]; l.Key != key || l.ReconcileID != "ch_"+key || l.State != "completed" {
			t.Errorf("node %d: line %+v, want %s completed with its charge", node, l, key)
		}
	}
}

// TestRecordsExportReaderGone: a client that stops reading partway and
// hangs up ends its export (at the next flush, holding no transaction):
// the listener then serves a whole export and a write, and shuts down at
// the test's end rather than waiting on a stuck writer. Not parallel: it
// pauses the OpenAPI check.
func TestRecordsExportReaderGone(t *testing.T) {
	theContract.pause(t) // the check reads a streamed answer whole: the hang-up would not reach the stream
	m := memstore.New(t)
	u := startExportAPI(t, m, nil, nil)
	const n = 20_000
	cmds := make([]*command.Command, n)
	for i := range cmds {
		cmds[i] = command.RecordBeginCommand(command.BeginRequest{Key: command.RecordKey("pay", "", fmt.Sprintf("key-%06d-%0100d", i, 0)), Fingerprint: make([]byte, 32), TTL: time.Hour})
	}
	if _, err := m.ApplyMany(cmds); err != nil {
		t.Fatal(err)
	}
	const path = "/v1/records/export?since=2000-01-01T00:00:00Z&until=2099-01-01T00:00:00Z"
	for i := 0; i < 3; i++ {
		conn, err := net.Dial("tcp", strings.TrimPrefix(u, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path)
		buf := make([]byte, 4096)
		if _, err := io.ReadFull(conn, buf); err != nil || !strings.HasPrefix(string(buf), "HTTP/1.1 200 ") {
			t.Fatalf("export start: %v %.100q", err, buf)
		}
		conn.Close()
	}
	r := do(t, "GET", u+path, "")
	if lines, end := readExport(t, r.Body); len(lines) != n || !end.End {
		t.Fatalf("the export after three hang-ups: %d lines, end %+v", len(lines), end)
	}
	if r := do(t, "PUT", u+"/v1/kv/after", "v"); r.Status != 200 && r.Status != 201 {
		t.Fatalf("a write after the hang-ups = %d %s", r.Status, r.Body)
	}
}
