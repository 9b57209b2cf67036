package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testcluster"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemgate/idemgate/auth"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/locks"
	"github.com/idemgate/idemgate/once"
	"github.com/idemgate/idemgate/raftstore"
	"github.com/idemgate/idemgate/storeapi"
	"github.com/idemgate/idemgate/tokens"
)

// apiCluster is n API listeners over one in-memory store (the behaviour
// tests), or over a real cluster, one per node (c set: the wiring tests).
// nodeStore is a store as a node holds it: the API's Store, and the form
// tokens' (tokens.New is given it).
type nodeStore interface {
	Store
	tokens.Store
	locks.Store
}

// memstore stands in for the store a node holds.
var _ nodeStore = (*memstore.Store)(nil)

type apiCluster struct {
	c    *testcluster.Cluster
	apis []*API
	urls []string
	// reconcile is every listener's Config.ReconcileIDs.
	reconcile map[string][]string
	// locks is each store's lock service: one per store, as a node has
	// (the store tells one observer its grants).
	locks map[nodeStore]*locks.Service
	// tracer is every listener's Config.Tracer (nil: tracing off).
	tracer trace.Tracer
}

// startAPIs starts n API listeners over one in-memory store, authorizing by
// access (nil: no authorization).
func startAPIs(t testing.TB, n int, access *auth.Access) *apiCluster {
	t.Helper()
	m := memstore.New(t)
	ac := &apiCluster{}
	for i := 0; i < n; i++ {
		ac.serve(t, m, prometheus.NewRegistry(), access)
	}
	return ac
}

// serve starts one API listener over s.
func (ac *apiCluster) serve(t testing.TB, s nodeStore, reg *prometheus.Registry, access *auth.Access) {
	t.Helper()
	tok := tokens.New(s, 30*time.Minute)
	if err := tok.Register(reg); err != nil {
		t.Fatal(err)
	}
	onceSvc := once.New(s, testRetention)
	if err := onceSvc.Register(reg); err != nil {
		t.Fatal(err)
	}
	lockSvc := ac.locks[s]
	if lockSvc == nil {
		lockSvc = newLocks(t, s)
		if ac.locks == nil {
			ac.locks = map[nodeStore]*locks.Service{}
		}
		ac.locks[s] = lockSvc
	}
	if err := lockSvc.Register(reg); err != nil {
		t.Fatal(err)
	}
	api := New(Config{Addr: "127.0.0.1:0", OpTimeout: 5 * time.Second,
		Limits: httpx.Limits{MaxRequestBody: 1 << 20, MaxHeaderBytes: 8 << 10, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Access: access, ReconcileIDs: ac.reconcile, Tracer: ac.tracer}, s, tok, onceSvc, lockSvc, reg)
	if err := api.Listen(); err != nil {
		t.Fatal(err)
	}
	go api.Serve()
	// Idle keep-alive connections would hold Shutdown until they time out.
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		testsupport.CloseIdle()
		api.Shutdown(context.Background())
	})
	ac.apis = append(ac.apis, api)
	ac.urls = append(ac.urls, "http://"+api.Addr())
}

// newLocks is the lock service over s.
func newLocks(t testing.TB, s locks.Store) *locks.Service {
	t.Helper()
	svc, err := locks.New(s, locks.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// testRetention is the once scopes' retention in the tests: an hour, and
// a second for the scope "brief".
func testRetention(scope string) time.Duration {
	if scope == "brief" {
		return time.Second
	}
	return time.Hour
}

func startAPICluster(t testing.TB, n int) *apiCluster {
	t.Helper()
	return startAPIClusterWith(t, n, nil, nil)
}

// startAPIClusterWith starts the cluster with tweak applied to every
// store's config, and every API listener authorizing by access (nil: no
// authorization).
func startAPIClusterWith(t testing.TB, n int, tweak func(*raftstore.Config), access *auth.Access) *apiCluster {
	t.Helper()
	c := testcluster.Start(t, n, tweak)
	ac := &apiCluster{c: c}
	for _, s := range c.Stores {
		reg := prometheus.NewRegistry()
		if err := s.Register(reg); err != nil {
			t.Fatal(err)
		}
		ac.serve(t, s, reg, access)
	}
	return ac
}

func TestAPIKV(t *testing.T) {
	t.Parallel()
	ac := startAPIs(t, 3, nil)
	u := ac.urls
	steps := []struct {
		method, url, body string
		hdr               []string
		status            int
		wantBody, problem string
		etag              bool
	}{
		{"PUT", u[0] + "/v1/kv/order-1?nx=1&ttl=30s", "charged", nil, 201, "", "", true},
		// The longest Go duration would overflow the expiry (it was
		// accepted twice, as expired at once): refused, and the key kept.
		{"PUT", u[1] + "/v1/kv/order-1?nx=1&ttl=2562047h", "other", nil, 400, "", "invalid-ttl", false},
		{"PUT", u[1] + "/v1/kv/order-1?nx=1", "again", nil, 409, "charged", "", true},
		{"PUT", u[2] + "/v1/kv/order-1", "again", []string{"If-None-Match", "*"}, 409, "charged", "", true},
		// Only * is a condition the store can check: a version would be
		// ignored, and the key overwritten.
		{"PUT", u[2] + "/v1/kv/order-1", "again", []string{"If-None-Match", `"1"`}, 400, "", "bad-request", false},
		{"GET", u[2] + "/v1/kv/order-1", "", nil, 200, "charged", "", true},
		{"PUT", u[1] + "/v1/kv/order-1", "cas", []string{"If-Match", `"999"`}, 412, "", "version-mismatch", false},
		{"PUT", u[1] + "/v1/kv/order-1", "cas", []string{"If-Match", "garbage"}, 400, "", "invalid-version", false},
		{"PUT", u[0] + "/v1/kv/plain", "p1", nil, 200, "", "", true},
		{"PUT", u[1] + "/v1/kv/plain", "p2", nil, 200, "", "", true},
		{"DELETE", u[2] + "/v1/kv/plain", "", nil, 200, "p2", "", true},
		{"DELETE", u[0] + "/v1/kv/plain", "", nil, 404, "", "not-found", false},
		{"GET", u[0] + "/v1/kv/plain", "", nil, 404, "", "not-found", false},
		{"PUT", u[0] + "/v1/kv/" + strings.Repeat("k", 256), "x", nil, 400, "", "invalid-key", false},
		{"PUT", u[0] + "/v1/kv/a%0Ab", "x", nil, 400, "", "invalid-key", false},
		// The store's reserved keys (a member's API address) are refused on
		// every face; here the API's own key rule refuses them first.
		{"PUT", u[0] + "/v1/kv/%00node%2Fn1", "evil", nil, 400, "", "invalid-key", false},
		{"PUT", u[0] + "/v1/kv/%00node%2Fn1?nx=1", "evil", nil, 400, "", "invalid-key", false},
		{"GET", u[1] + "/v1/kv/%00node%2Fn1", "", nil, 400, "", "invalid-key", false},
		{"GET", u[1] + "/v1/kv/%00db%01a", "", nil, 400, "", "invalid-key", false}, // another keyspace's stored key
		{"DELETE", u[2] + "/v1/kv/%00node%2Fn1", "", nil, 400, "", "invalid-key", false},
		{"PUT", u[0] + "/v1/kv/k?ttl=-1s", "x", nil, 400, "", "invalid-ttl", false},
		{"PUT", u[0] + "/v1/kv/k?nx=maybe", "x", nil, 400, "", "bad-request", false},
		{"PATCH", u[0] + "/v1/kv/k", "x", nil, 405, "", "method-not-allowed", false},
		{"GET", u[0] + "/v1/nothing", "", nil, 404, "", "not-found", false},
	}
	for i, s := range steps {
		r := do(t, s.method, s.url, s.body, s.hdr...)
		if r.Status != s.status {
			t.Fatalf("step %d %s %s = %d %s, want %d", i, s.method, s.url, r.Status, r.Body, s.status)
		}
		if s.wantBody != "" && r.Body != s.wantBody {
			t.Fatalf("step %d body = %q, want %q", i, r.Body, s.wantBody)
		}
		if s.problem != "" {
			if got := r.ProblemType(t); got != s.problem {
				t.Fatalf("step %d problem = %q, want %q", i, got, s.problem)
			}
		}
		if s.etag && r.Header.Get("ETag") == "" {
			t.Fatalf("step %d: no ETag", i)
		}
	}
	// Compare-and-set with the version GET returns, from another node.
	g := do(t, "GET", u[0]+"/v1/kv/order-1", "")
	if r := do(t, "PUT", u[2]+"/v1/kv/order-1", "refunded", "If-Match", g.Header.Get("ETag")); r.Status != 200 {
		t.Fatalf("CAS with the current ETag = %d %s", r.Status, r.Body)
	}
	if r := do(t, "PUT", u[1]+"/v1/kv/order-1", "again", "If-Match", g.Header.Get("ETag")); r.Status != 412 {
		t.Fatalf("CAS with a stale ETag = %d, want 412", r.Status)
	}
	if r := do(t, "GET", u[1]+"/v1/kv/order-1", ""); r.Body != "refunded" {
		t.Fatalf("value after CAS = %q", r.Body)
	}
	// Compare-and-delete: a stale version (the lock moved on) is refused
	// and the key kept; the current one deletes.
	cur := do(t, "GET", u[0]+"/v1/kv/order-1", "").Header.Get("ETag")
	if r := do(t, "DELETE", u[1]+"/v1/kv/order-1", "", "If-Match", g.Header.Get("ETag")); r.Status != 412 ||
		r.ProblemType(t) != "version-mismatch" || r.Header.Get("ETag") != cur {
		t.Fatalf("DELETE with a stale ETag = %d %s (ETag %q), want 412 with the current %s", r.Status, r.Body, r.Header.Get("ETag"), cur)
	}
	if r := do(t, "DELETE", u[1]+"/v1/kv/order-1", "", "If-Match", "nope"); r.Status != 400 || r.ProblemType(t) != "invalid-version" {
		t.Fatalf("DELETE with a bad If-Match = %d %s", r.Status, r.Body)
	}
	if r := do(t, "GET", u[2]+"/v1/kv/order-1", ""); r.Status != 200 || r.Body != "refunded" {
		t.Fatalf("a refused DELETE removed the key: %d %q", r.Status, r.Body)
	}
	if r := do(t, "DELETE", u[2]+"/v1/kv/order-1", "", "If-Match", cur); r.Status != 200 || r.Body != "refunded" {
		t.Fatalf("DELETE with the current ETag = %d %q", r.Status, r.Body)
	}
	if r := do(t, "DELETE", u[2]+"/v1/kv/order-1", "", "If-Match", cur); r.Status != 404 {
		t.Fatalf("DELETE of a deleted key = %d, want 404", r.Status)
	}
}

func TestAPITokensRace(t *testing.T) {
	t.Parallel()
	ac := startAPIs(t, 3, nil)
	r := postJSON(t, ac.urls[1]+"/v1/tokens", `{"scope":"pay","ttl":"5m"}`)
	if r.Status != 201 {
		t.Fatalf("issue = %d %s", r.Status, r.Body)
	}
	var tok struct{ Token, Scope, ExpiresAt string }
	json.Unmarshal([]byte(r.Body), &tok)
	exp, err := time.Parse(time.RFC3339Nano, tokExpires(r.Body))
	if err != nil || tokens.CheckToken(tok.Token) != nil || tok.Scope != "pay" || time.Until(exp) < 4*time.Minute {
		t.Fatalf("issued %+v (expires %v, %v)", tok, exp, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := postJSON(t, ac.urls[i%3]+"/v1/tokens/consume", fmt.Sprintf(`{"scope":"pay","token":%q}`, tok.Token))
			mu.Lock()
			codes[r.Status]++
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	if codes[200] != 1 || codes[409] != 31 {
		t.Fatalf("consume answers = %v, want one 200 and 31 409s", codes)
	}
	for _, bad := range []struct{ url, body, problem string }{
		{"/v1/tokens", `{"scope":"pay","ttl":"soon"}`, "invalid-ttl"},
		{"/v1/tokens", `{"scope":"a b"}`, "invalid-scope"},
		{"/v1/tokens", `{"scope":"pay","colour":1}`, "invalid-json"},
		{"/v1/tokens", `not json`, "invalid-json"},
		{"/v1/tokens/consume", `{"scope":"pay","token":"not-a-uuid"}`, "invalid-token"},
	} {
		r := postJSON(t, ac.urls[0]+bad.url, bad.body)
		if got := r.ProblemType(t); got != bad.problem {
			t.Fatalf("POST %s %s = %d %s, want problem %s", bad.url, bad.body, r.Status, got, bad.problem)
		}
	}
}

// TestAPIJSONContentType: the JSON endpoints take only a body declared
// application/json, so a browser's cross-origin text/plain or form POST
// (sent without a CORS preflight) never reaches them: 415 before the body
// is decoded.
func TestAPIJSONContentType(t *testing.T) {
	ac := startAPICluster(t, 3)
	u := ac.urls[0]
	tests := []struct {
		url, body, ctype string
		status           int
	}{
		{"/v1/tokens", `{"scope":"pay"}`, "application/json", 201},
		{"/v1/tokens", `{"scope":"pay"}`, "application/json; charset=utf-8", 201},
		{"/v1/tokens", `{"scope":"pay"}`, "Application/JSON;charset=UTF-8", 201},
		{"/v1/tokens", `{"scope":"pay"}`, "", 415},
		{"/v1/tokens", `{"scope":"pay"}`, "text/plain", 415},
		{"/v1/tokens", `{"scope":"pay"}`, "text/plain; charset=utf-8", 415},
		{"/v1/tokens", `{"scope":"pay"}`, "application/x-www-form-urlencoded", 415},
		{"/v1/tokens", "--x\r\nContent-Disposition: form-data; name=\"scope\"\r\n\r\npay\r\n--x--\r\n", "multipart/form-data; boundary=x", 415},
		{"/v1/tokens", `{"scope":"pay"}`, "application/jsonp", 415},
		{"/v1/tokens", `{"scope":"pay"}`, "text/plain; type=application/json", 415},
		{"/v1/tokens", `not json`, "text/plain", 415},
		{"/v1/tokens/consume", `{"scope":"pay","token":"not-a-uuid"}`, "text/plain", 415},
		{"/v1/tokens/consume", `{"scope":"pay","token":"not-a-uuid"}`, "application/json", 400},
		{"/v1/cluster/nodes", `{"id":"x","raft":"nohost","api":"127.0.0.1:1"}`, "text/plain", 415},
		{"/v1/cluster/nodes", `{"id":"x","raft":"nohost","api":"127.0.0.1:1"}`, "application/json", 400},
	}
	for _, tt := range tests {
		var hdr []string
		if tt.ctype != "" {
			hdr = []string{"Content-Type", tt.ctype}
		}
		r := do(t, "POST", u+tt.url, tt.body, hdr...)
		if r.Status != tt.status {
			t.Errorf("POST %s as %q: got %d %s, want %d", tt.url, tt.ctype, r.Status, r.Body, tt.status)
			continue
		}
		if tt.status == 415 {
			if got := r.ProblemType(t); got != "unsupported-media-type" {
				t.Errorf("POST %s as %q: got problem %q, want unsupported-media-type", tt.url, tt.ctype, got)
			}
		}
	}
}

func tokExpires(body string) string {
	var m map[string]string
	json.Unmarshal([]byte(body), &m)
	return m["expires_at"]
}

func TestAPIClusterHealthMetrics(t *testing.T) {
	ac := startAPICluster(t, 3)
	r := do(t, "GET", ac.urls[2]+"/v1/cluster", "")
	var cl clusterJSON
	if err := json.Unmarshal([]byte(r.Body), &cl); err != nil || cl.Leader == "" || len(cl.Nodes) != 3 {
		t.Fatalf("cluster = %s (%v)", r.Body, err)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if r := do(t, "GET", ac.urls[1]+path, ""); r.Status != 200 {
			t.Fatalf("%s = %d", path, r.Status)
		}
	}
	r = do(t, "GET", ac.urls[0]+"/metrics", "")
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader([]byte(r.Body)))
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	for _, name := range []string{"idemgate_raft_state", "idemgate_raft_commit_index", "idemgate_raft_applied_index",
		"idemgate_raft_leader_changes_total", "idemgate_raft_apply_duration_seconds", "idemgate_records",
		"idemgate_expired_total"} {
		if _, ok := families[name]; !ok {
			t.Errorf("metric %s missing", name)
		}
	}
	// Records: absent, then released by hand.
	if r := do(t, "GET", ac.urls[0]+"/v1/records/pay/k1?tenant=u1", ""); r.Status != 404 {
		t.Fatalf("record GET = %d", r.Status)
	}
	if r := do(t, "DELETE", ac.urls[0]+"/v1/records/pay/k1", ""); r.Status != 404 {
		t.Fatalf("record DELETE = %d", r.Status)
	}
	if r := do(t, "GET", ac.urls[0]+"/v1/records/pay", ""); r.Status != 400 {
		t.Fatalf("record without key = %d", r.Status)
	}
	// Membership: remove a follower through another node, then add it back
	// through a member (the removed node itself refuses: it serves nothing).
	var follower storeapi.Server
	member := ""
	for _, n := range cl.Nodes {
		if n.ID != cl.Leader {
			follower = n
		}
	}
	for i, cfg := range ac.c.Cfgs {
		if cfg.NodeID == cl.Leader {
			member = ac.urls[i]
		}
	}
	if r := do(t, "DELETE", ac.urls[0]+"/v1/cluster/nodes/nope", ""); r.Status != 404 {
		t.Fatalf("remove unknown node = %d %s", r.Status, r.Body)
	}
	if r := do(t, "DELETE", ac.urls[0]+"/v1/cluster/nodes/"+follower.ID, ""); r.Status != 200 {
		t.Fatalf("remove %s = %d %s", follower.ID, r.Status, r.Body)
	}
	body := fmt.Sprintf(`{"id":%q,"raft":%q,"api":"127.0.0.1:1"}`, follower.ID, follower.RaftAddr)
	if r := postJSON(t, member+"/v1/cluster/nodes", body); r.Status != 200 || !strings.Contains(r.Body, `"api":"127.0.0.1:1"`) {
		t.Fatalf("add %s = %d %s", follower.ID, r.Status, r.Body)
	}
	if r := postJSON(t, ac.urls[1]+"/v1/cluster/nodes", `{"id":"x","raft":"nohost"}`); r.Status != 400 {
		t.Fatalf("add with bad address = %d", r.Status)
	}
}

func TestAPINoQuorum503(t *testing.T) {
	ac := startAPICluster(t, 3)
	leader := ac.c.WaitLeader(5 * time.Second)
	for i := range ac.c.Stores {
		if i != leader {
			ac.c.Stop(i)
		}
	}
	r := do(t, "PUT", ac.urls[leader]+"/v1/kv/k?nx=1", "v")
	if r.Status != 503 || r.Header.Get("Retry-After") == "" || r.ProblemType(t) != "unavailable" {
		t.Fatalf("write without quorum = %d %v %s, want 503 with Retry-After", r.Status, r.Header, r.Body)
	}
	if r := do(t, "GET", ac.urls[leader]+"/readyz", ""); r.Status != 503 {
		t.Fatalf("readyz without quorum = %d", r.Status)
	}
}

// TestAPIRetryKeySettlesALostAnswer: a consume whose answer was lost (503
// while the cluster had no quorum: it may or may not have been applied) is
// retried under the same Idempotency-Key and answered with what really
// happened: 200 once for this client, never "already used" because of its
// own first attempt.
func TestAPIRetryKeySettlesALostAnswer(t *testing.T) {
	ac := startAPICluster(t, 3)
	leader := ac.c.WaitLeader(5 * time.Second)
	issue := func() string {
		r := postJSON(t, ac.urls[leader]+"/v1/tokens", `{"scope":"pay"}`)
		var tok struct{ Token string }
		if json.Unmarshal([]byte(r.Body), &tok); r.Status != 201 {
			t.Fatalf("issue = %d %s", r.Status, r.Body)
		}
		return fmt.Sprintf(`{"scope":"pay","token":%q}`, tok.Token)
	}
	tok, other := issue(), issue()
	for i := range ac.c.Stores {
		if i != leader {
			ac.c.Stop(i)
		}
	}
	if r := postJSON(t, ac.urls[leader]+"/v1/tokens/consume", tok, "Idempotency-Key", "k1"); r.Status != 503 {
		t.Fatalf("consume without quorum = %d %s, want 503", r.Status, r.Body)
	}
	for i := range ac.c.Stores {
		if i != leader {
			ac.c.Start(i)
		}
	}
	ac.c.WaitLeader(10 * time.Second)
	// Only this node's API listener still has a live store (the test
	// cluster's restarted nodes are new stores); it forwards to the leader.
	url := ac.urls[leader]
	for i := 0; i < 3; i++ {
		if r := postJSON(t, url+"/v1/tokens/consume", tok, "Idempotency-Key", "k1"); r.Status != 200 {
			t.Fatalf("retry %d under the same key = %d %s, want 200", i, r.Status, r.Body)
		}
	}
	if r := postJSON(t, url+"/v1/tokens/consume", tok); r.Status != 409 {
		t.Fatalf("consume without the key after the settled one = %d, want 409", r.Status)
	}
	// The same key on another request is another request.
	if r := postJSON(t, url+"/v1/tokens/consume", other, "Idempotency-Key", "k1"); r.Status != 200 {
		t.Fatalf("another token under the same key = %d %s, want 200", r.Status, r.Body)
	}
	if r := postJSON(t, url+"/v1/tokens/consume", other, "Idempotency-Key", "k2"); r.Status != 409 {
		t.Fatalf("the other token under a new key = %d, want 409", r.Status)
	}
	// SETNX retried under its key: the first attempt's 201, not a 409
	// caused by itself; the key's value is the first attempt's.
	for i := 0; i < 2; i++ {
		if r := do(t, "PUT", url+"/v1/kv/lock?nx=1&ttl=1m", "owner-a", "Idempotency-Key", "lock-a"); r.Status != 201 {
			t.Fatalf("SETNX attempt %d = %d %s, want 201", i, r.Status, r.Body)
		}
	}
	if r := do(t, "PUT", url+"/v1/kv/lock?nx=1&ttl=1m", "owner-b", "Idempotency-Key", "lock-b"); r.Status != 409 || r.Body != "owner-a" {
		t.Fatalf("SETNX by another owner = %d %q, want 409 owner-a", r.Status, r.Body)
	}
	for _, bad := range []struct {
		name string
		hdr  []string
	}{
		{"space", []string{"Idempotency-Key", "a b"}},
		{"too long", []string{"Idempotency-Key", strings.Repeat("k", 256)}},
		{"bad sf-string", []string{"Idempotency-Key", `"open`}},
	} {
		if r := postJSON(t, url+"/v1/tokens/consume", other, bad.hdr...); r.Status != 400 || r.ProblemType(t) != "invalid-key" {
			t.Fatalf("%s: %d %s, want 400 invalid-key", bad.name, r.Status, r.Body)
		}
	}
	req, _ := http.NewRequest("DELETE", url+"/v1/kv/lock", nil)
	req.Header.Add("Idempotency-Key", "x")
	req.Header.Add("Idempotency-Key", "y")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("two Idempotency-Key headers = %d, want 400", resp.StatusCode)
	}
	if r := do(t, "GET", url+"/v1/kv/lock", ""); r.Status != 200 || r.Body != "owner-a" {
		t.Fatalf("the refused requests changed the key: %d %q", r.Status, r.Body)
	}
}

// TestHealthTellsTheTruth: once a node's Raft has stopped (the disk guard
// stops it, as does a storage failure), healthz and readyz are 503; before,
// healthz said 200 while every call failed.
func TestHealthTellsTheTruth(t *testing.T) {
	ac := startAPICluster(t, 1)
	for _, path := range []string{"/healthz", "/readyz"} {
		if r := do(t, "GET", ac.urls[0]+path, ""); r.Status != 200 {
			t.Fatalf("%s on a running node = %d", path, r.Status)
		}
	}
	if err := ac.c.Store(0).Raft().Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	for path, problem := range map[string]string{"/healthz": "not-alive", "/readyz": "not-ready"} {
		if r := do(t, "GET", ac.urls[0]+path, ""); r.Status != 503 || r.ProblemType(t) != problem {
			t.Fatalf("%s once raft stopped = %d %s, want 503 %s", path, r.Status, r.Body, problem)
		}
	}
}
