package api

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/auth"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// The secrets of the test tokens; the Access holds only their hashes.
const (
	readSecret    = "r3ad-s3cret"
	appSecret     = "app-s3cret"
	adminSecret   = "adm1n-s3cret"
	unknownSecret = "n0body-s3cret"
)

func apiToken(name string, role auth.Role, secret string) auth.Token {
	return auth.Token{Name: name, Role: role, SHA256: sha256.Sum256([]byte(secret))}
}

// testAccess is one token per role, and open as auth.NewAccess takes it.
func testAccess(t testing.TB, open []string) *auth.Access {
	t.Helper()
	ac, err := auth.NewAccess([]auth.Token{
		apiToken("reader", auth.RoleRead, readSecret),
		apiToken("app", auth.RoleApp, appSecret),
		apiToken("admin", auth.RoleAdmin, adminSecret),
	}, open)
	if err != nil {
		t.Fatal(err)
	}
	return ac
}

func bearer(secret string) []string { return []string{"Authorization", "Bearer " + secret} }

// checkRefusal checks what a 401 or 403 carries: its problem type, and the
// Bearer challenge on a 401 only.
func checkRefusal(t *testing.T, what string, r reply) {
	t.Helper()
	wantType, wantChallenge := map[int]string{401: "unauthorized", 403: "forbidden"}[r.Status], ""
	if r.Status == 401 {
		wantChallenge = `Bearer realm="idemgate"`
	}
	if got := r.Header.Get("WWW-Authenticate"); got != wantChallenge {
		t.Errorf("%s: got WWW-Authenticate %q, want %q", what, got, wantChallenge)
	}
	if wantType != "" && r.Body != "" {
		if got := r.ProblemType(t); got != wantType {
			t.Errorf("%s: got problem %q, want %q", what, got, wantType)
		}
	}
}

// TestAPIAuthEndpoints: every endpoint, called with no token, an unknown
// token and a token of each role, gets exactly the status below: 401 and
// 403 where refused, else the endpoint's own answer.
func TestAPIAuthEndpoints(t *testing.T) {
	ac := startAPIClusterWith(t, 3, nil, testAccess(t, nil))
	// The leader: a follower may answer /readyz 503 for a moment after a
	// write, until it applies what it learned is committed.
	u := ac.urls[ac.c.WaitLeader(5*time.Second)]
	waitReady(t, u, bearer(readSecret)...)
	callers := []struct {
		name string
		hdr  []string
	}{
		{"no token", nil},
		{"unknown token", bearer(unknownSecret)},
		{"read", bearer(readSecret)},
		{"app", bearer(appSecret)},
		{"admin", bearer(adminSecret)},
	}
	const notNode = `{"id":"x","raft":"nohost","api":"127.0.0.1:1"}` // 400 once let in
	tests := []struct {
		method, path, body string
		want               [5]int // by caller: none, unknown, read, app, admin
	}{
		{"GET", "/healthz", "", [5]int{200, 200, 200, 200, 200}},
		{"GET", "/readyz", "", [5]int{200, 200, 200, 200, 200}},
		{"GET", "/metrics", "", [5]int{200, 200, 200, 200, 200}},
		{"POST", "/v1/tokens", `{"scope":"pay"}`, [5]int{401, 401, 403, 201, 201}},
		{"POST", "/v1/tokens/consume", `{"scope":"pay","token":"not-a-uuid"}`, [5]int{401, 401, 403, 400, 400}},
		{"PUT", "/v1/kv/k", "v2", [5]int{401, 401, 403, 200, 200}},
		{"GET", "/v1/kv/k", "", [5]int{401, 401, 200, 200, 200}},
		{"HEAD", "/v1/kv/k", "", [5]int{401, 401, 200, 200, 200}},
		{"DELETE", "/v1/kv/k", "", [5]int{401, 401, 403, 200, 200}},
		{"POST", "/v1/kv/n", `{"by":1}`, [5]int{401, 401, 403, 200, 200}},
		{"PATCH", "/v1/kv/k", "v", [5]int{401, 401, 403, 405, 405}},
		{"GET", "/v1/records/s/k", "", [5]int{401, 401, 404, 404, 404}},
		{"DELETE", "/v1/records/s/k", "", [5]int{401, 401, 403, 403, 404}},
		{"GET", "/v1/cluster", "", [5]int{401, 401, 200, 200, 200}},
		{"POST", "/v1/cluster/nodes", notNode, [5]int{401, 401, 403, 403, 400}},
		{"DELETE", "/v1/cluster/nodes/x", "", [5]int{401, 401, 403, 403, 404}},
		{"POST", "/v1/cluster/nodes/x/promote", "", [5]int{401, 401, 403, 403, 404}},
		{"GET", "/v1/snapshot", "", [5]int{401, 401, 403, 403, 200}},
		{"GET", "/v1/suspects", "", [5]int{401, 401, 200, 200, 200}},
		{"GET", "/v1/nothing", "", [5]int{401, 401, 404, 404, 404}},
		{"POST", "/v1/nothing", "", [5]int{401, 401, 403, 403, 404}},
	}
	for _, tt := range tests {
		for i, c := range callers {
			// Every KV call finds /v1/kv/k holding "v", so a GET or
			// DELETE let through answers 200.
			if strings.HasPrefix(tt.path, "/v1/kv/") {
				if r := do(t, "PUT", u+"/v1/kv/k", "v", bearer(adminSecret)...); r.Status != 200 {
					t.Fatalf("setup PUT = %d %s", r.Status, r.Body)
				}
			}
			hdr := append([]string{"Content-Type", "application/json"}, c.hdr...)
			r := do(t, tt.method, u+tt.path, tt.body, hdr...)
			what := fmt.Sprintf("%s %s with %s", tt.method, tt.path, c.name)
			if r.Status != tt.want[i] {
				t.Errorf("%s: got %d %s, want %d", what, r.Status, r.Body, tt.want[i])
				continue
			}
			checkRefusal(t, what, r)
		}
	}
}

// TestAPIAuthHostile: malformed, doubled and disguised credentials each get
// the exact answer below, and a refused PUT writes nothing.
func TestAPIAuthHostile(t *testing.T) {
	t.Parallel()
	ac := startAPIs(t, 2, testAccess(t, nil))
	addr := strings.TrimPrefix(ac.urls[0], "http://")
	adminHash := sha256.Sum256([]byte(adminSecret))
	tests := []struct {
		name   string
		auth   string // header lines, each ending in \r\n
		query  string
		status int
	}{
		{"no Authorization", "", "", 401},
		{"Basic with the admin secret as password", "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+adminSecret)) + "\r\n", "", 401},
		{"Basic with the bare admin secret", "Authorization: Basic " + adminSecret + "\r\n", "", 401},
		{"the admin secret without a scheme", "Authorization: " + adminSecret + "\r\n", "", 401},
		{"Bearer with no secret", "Authorization: Bearer\r\n", "", 401},
		{"Bearer and a space, no secret", "Authorization: Bearer \r\n", "", 401},
		{"Bearer and spaces, no secret", "Authorization: Bearer    \r\n", "", 401},
		{"empty Authorization", "Authorization: \r\n", "", 401},
		{"two Authorization headers, both admin", "Authorization: Bearer " + adminSecret + "\r\nAuthorization: Bearer " + adminSecret + "\r\n", "", 401},
		{"two Authorization headers, unknown then admin", "Authorization: Bearer " + unknownSecret + "\r\nAuthorization: Bearer " + adminSecret + "\r\n", "", 401},
		{"two Authorization headers, other case", "Authorization: Bearer " + adminSecret + "\r\nauthorization: Bearer " + adminSecret + "\r\n", "", 401},
		{"Bearer and Basic in one header", "Authorization: Bearer " + adminSecret + ", Basic eDp5\r\n", "", 401},
		{"admin secret, trailing space (not part of the value)", "Authorization: Bearer " + adminSecret + " \r\n", "", 200},
		{"admin secret, trailing tab (not part of the value)", "Authorization: Bearer " + adminSecret + "\t\r\n", "", 200},
		{"admin secret with a space inside", "Authorization: Bearer adm1n s3cret\r\n", "", 401},
		{"admin secret, two spaces after Bearer", "Authorization: Bearer  " + adminSecret + "\r\n", "", 200},
		{"admin secret, tab after Bearer", "Authorization: Bearer\t" + adminSecret + "\r\n", "", 401},
		{"lowercase bearer", "Authorization: bearer " + adminSecret + "\r\n", "", 200},
		{"uppercase BEARER", "Authorization: BEARER " + adminSecret + "\r\n", "", 200},
		{"a prefix of the admin secret", "Authorization: Bearer " + adminSecret[:5] + "\r\n", "", 401},
		{"the admin secret and more", "Authorization: Bearer " + adminSecret + "x\r\n", "", 401},
		{"the admin secret's hash as the secret", "Authorization: Bearer " + hex.EncodeToString(adminHash[:]) + "\r\n", "", 401},
		{"a non-ASCII secret", "Authorization: Bearer caf\xc3\xa9\r\n", "", 401},
		{"a 4 KB token", "Authorization: Bearer " + strings.Repeat("t", 4<<10) + "\r\n", "", 401},
		{"a 10 KB token (over the header limit)", "Authorization: Bearer " + strings.Repeat("t", 10<<10) + "\r\n", "", 431},
		{"the admin secret in the query", "", "?access_token=" + adminSecret, 401},
		{"the admin secret in Proxy-Authorization", "Proxy-Authorization: Bearer " + adminSecret + "\r\n", "", 401},
		{"the admin secret in a cookie", "Cookie: token=" + adminSecret + "\r\n", "", 401},
		{"the read secret (a write)", "Authorization: Bearer " + readSecret + "\r\n", "", 403},
	}
	for i, tt := range tests {
		path := fmt.Sprintf("/v1/kv/hostile-%d", i)
		raw := "PUT " + path + tt.query + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + tt.auth + "Content-Length: 1\r\n\r\nx"
		r, ok := rawReply(t, addr, raw, 0)
		if !ok || r.Status != tt.status {
			t.Errorf("%s: got %d %s, want %d", tt.name, r.Status, r.Body, tt.status)
			continue
		}
		checkRefusal(t, tt.name, r)
		wantKV := 404
		if tt.status == 200 {
			wantKV = 200
		}
		if g := do(t, "GET", ac.urls[1]+path, "", bearer(adminSecret)...); g.Status != wantKV {
			t.Errorf("%s: got GET %s = %d after the PUT, want %d", tt.name, path, g.Status, wantKV)
		}
	}
}

// TestAPIAuthCSRFShape: a browser's cross-origin text/plain POST, even one
// carrying an admin token, never reaches a JSON endpoint: 415, and nothing
// changed.
func TestAPIAuthCSRFShape(t *testing.T) {
	ac := startAPIClusterWith(t, 3, nil, testAccess(t, nil))
	u := ac.urls[0]
	admin := bearer(adminSecret)
	node := `{"id":"n9","raft":"127.0.0.1:1","api":"127.0.0.1:2"}`
	for _, ctype := range []string{"text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded", ""} {
		r := do(t, "POST", u+"/v1/cluster/nodes", node, append([]string{"Content-Type", ctype}, admin...)...)
		if r.Status != 415 || r.ProblemType(t) != "unsupported-media-type" {
			t.Fatalf("add node as %q: got %d %s, want 415 unsupported-media-type", ctype, r.Status, r.Body)
		}
	}
	// Without a token the 401 comes first: nothing about the body is said.
	if r := do(t, "POST", u+"/v1/cluster/nodes", node, "Content-Type", "text/plain"); r.Status != 401 {
		t.Fatalf("add node as text/plain without a token: got %d, want 401", r.Status)
	}
	var cl clusterJSON
	r := do(t, "GET", u+"/v1/cluster", "", admin...)
	if err := json.Unmarshal([]byte(r.Body), &cl); err != nil || len(cl.Nodes) != 3 {
		t.Fatalf("after the refused adds: got %d nodes (%s), want 3", len(cl.Nodes), r.Body)
	}

	r = postJSON(t, u+"/v1/tokens", `{"scope":"pay"}`, bearer(appSecret)...)
	var tok struct{ Token string }
	if json.Unmarshal([]byte(r.Body), &tok); r.Status != 201 {
		t.Fatalf("issue = %d %s", r.Status, r.Body)
	}
	consume := fmt.Sprintf(`{"scope":"pay","token":%q}`, tok.Token)
	if r := do(t, "POST", u+"/v1/tokens/consume", consume, append([]string{"Content-Type", "text/plain"}, admin...)...); r.Status != 415 {
		t.Fatalf("consume as text/plain: got %d %s, want 415", r.Status, r.Body)
	}
	if r := postJSON(t, u+"/v1/tokens/consume", consume, admin...); r.Status != 200 {
		t.Fatalf("consume as JSON after the refused one: got %d %s, want 200 (the token unspent)", r.Status, r.Body)
	}
}

// TestAPIAuthOpen: the endpoints an Access leaves open take no token; the
// others need one as any endpoint does.
func TestAPIAuthOpen(t *testing.T) {
	t.Parallel()
	ac := startAPIs(t, 1, nil)
	u := ac.urls[0]
	waitReady(t, u)
	tests := []struct {
		name string
		open []string
		want [3]int // healthz, readyz, metrics without a token
	}{
		{"no Access", nil, [3]int{200, 200, 200}},
		{"default (nil)", nil, [3]int{200, 200, 200}},
		{"explicit empty", []string{}, [3]int{401, 401, 401}},
		{"metrics only", []string{"metrics"}, [3]int{401, 401, 200}},
		{"healthz and readyz", []string{"healthz", "readyz"}, [3]int{200, 200, 401}},
	}
	for i, tt := range tests {
		if i > 0 {
			ac.apis[0].SetAccess(testAccess(t, tt.open))
		}
		for j, path := range []string{"/healthz", "/readyz", "/metrics"} {
			r := do(t, "GET", u+path, "")
			if r.Status != tt.want[j] {
				t.Errorf("%s: GET %s without a token: got %d, want %d", tt.name, path, r.Status, tt.want[j])
			}
			checkRefusal(t, tt.name+": GET "+path, r)
			if r := do(t, "GET", u+path, "", bearer(readSecret)...); r.Status != 200 {
				t.Errorf("%s: GET %s with the read token: got %d, want 200", tt.name, path, r.Status)
			}
		}
	}
}

// TestAPIAuthReload: SetAccess swaps tokens and open endpoints under load.
// A request answered before the swap began saw the old Access, one sent
// after it returned sees the new one, and none gets a 5xx.
func TestAPIAuthReload(t *testing.T) {
	t.Parallel()
	oldAccess, err := auth.NewAccess([]auth.Token{apiToken("old", auth.RoleApp, "old-s3cret")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	newAccess, err := auth.NewAccess([]auth.Token{apiToken("new", auth.RoleApp, "new-s3cret")}, []string{})
	if err != nil {
		t.Fatal(err)
	}
	ac := startAPIs(t, 3, oldAccess)
	const (
		before = iota // answered before the swap began
		during        // in flight while it ran
		after         // sent after it returned
	)
	var phase atomic.Int32
	type call struct{ secret, path string }
	calls := []call{
		{"old-s3cret", "/v1/kv/reload"}, {"new-s3cret", "/v1/kv/reload"},
		{"old-s3cret", "/v1/cluster"}, {"new-s3cret", "/v1/cluster"},
		{"", "/healthz"},
	}
	// want[phase][call] is the status it must get; 0 means 200 or 401.
	want := [3][5]int{
		before: {200, 401, 200, 401, 200},
		after:  {401, 200, 401, 200, 401},
	}
	var mu sync.Mutex
	seen := map[[2]int]int{} // (phase, call) -> answers
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			client := &http.Client{Timeout: 10 * time.Second}
			for n := w; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				c := calls[n%len(calls)]
				sentIn := int(phase.Load())
				method := "GET"
				if strings.HasPrefix(c.path, "/v1/kv/") {
					method = "PUT"
				}
				req, _ := http.NewRequest(method, ac.urls[n%3]+c.path, strings.NewReader("v"))
				if c.secret != "" {
					req.Header.Set("Authorization", "Bearer "+c.secret)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Errorf("%s %s: %v", method, c.path, err)
					return
				}
				resp.Body.Close()
				ph := sentIn
				if sentIn == before && phase.Load() != before {
					ph = during // answered after the swap began
				}
				exp := want[ph][n%len(calls)]
				if resp.StatusCode >= 500 || (exp != 0 && resp.StatusCode != exp) || (exp == 0 && resp.StatusCode != 200 && resp.StatusCode != 401) {
					t.Errorf("%s %s with %q, %d: got %d, want %d (0: 200 or 401)", method, c.path, c.secret, ph, resp.StatusCode, exp)
				}
				mu.Lock()
				seen[[2]int{ph, n % len(calls)}]++
				mu.Unlock()
			}
		}(w)
	}
	// Enough answers before the swap, then swap, then enough after it.
	enough := func(ph int) bool {
		mu.Lock()
		defer mu.Unlock()
		for i := range calls {
			if seen[[2]int{ph, i}] < 5 {
				return false
			}
		}
		return true
	}
	waitUntil(t, "answers before the swap", func() bool { return enough(before) })
	phase.Store(during)
	for _, api := range ac.apis {
		api.SetAccess(newAccess)
	}
	phase.Store(after)
	waitUntil(t, "answers after the swap", func() bool { return enough(after) })
	close(stop)
	wg.Wait()

	// nil turns authorization off again.
	for _, api := range ac.apis {
		api.SetAccess(nil)
	}
	if r := do(t, "PUT", ac.urls[2]+"/v1/kv/reload", "v"); r.Status != 200 {
		t.Fatalf("PUT without a token after SetAccess(nil): got %d, want 200", r.Status)
	}
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	testsupport.WaitFor(t, what, 20*time.Second, ok)
}

// waitReady waits until the node at u answers /readyz 200.
func waitReady(t *testing.T, u string, hdr ...string) {
	t.Helper()
	waitUntil(t, u+" ready", func() bool { return do(t, "GET", u+"/readyz", "", hdr...).Status == 200 })
}

// TestAPIRefusesBeforeReadingTheBody: a caller without a token is answered
// 401 as soon as its headers are in, its body never buffered (the answer
// comes while most of it is still unsent); an authorized body is
// read whole, up to the limit, chunked too; one over the limit is 413.
func TestAPIRefusesBeforeReadingTheBody(t *testing.T) {
	t.Parallel()
	ac := startAPIs(t, 1, testAccess(t, nil))
	addr := strings.TrimPrefix(ac.urls[0], "http://")
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	fmt.Fprintf(c, "PUT /v1/kv/big HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n", 900<<10) // under the 1 MiB limit
	c.Write(make([]byte, 16<<10))                                                                       // a little of it, then nothing more
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer while the body was still unsent: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || !resp.Close {
		t.Fatalf("unauthenticated 900 KiB PUT = %d (close %v), want 401 and the connection closed", resp.StatusCode, resp.Close)
	}
	admin := bearer(adminSecret)
	value := strings.Repeat("v", 600<<10)
	if r := do(t, "PUT", ac.urls[0]+"/v1/kv/big", value, admin...); r.Status != 200 {
		t.Fatalf("authorized 600 KiB PUT = %d %s", r.Status, r.Body)
	}
	if r := do(t, "GET", ac.urls[0]+"/v1/kv/big", "", admin...); r.Status != 200 || r.Body != value {
		t.Fatalf("GET after the PUT = %d, %d bytes, want the 600 KiB back", r.Status, len(r.Body))
	}
	req, _ := http.NewRequest("PUT", ac.urls[0]+"/v1/kv/chunked", io.MultiReader(strings.NewReader(value), strings.NewReader("!")))
	req.Header.Set("Authorization", "Bearer "+adminSecret)
	req.ContentLength = -1 // chunked
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("authorized chunked PUT = %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if r := do(t, "GET", ac.urls[0]+"/v1/kv/chunked", "", admin...); r.Body != value+"!" {
		t.Fatalf("the chunked value came back as %d bytes", len(r.Body))
	}
	// Over the limit: answered 413 as soon as the length is known. A raw
	// connection, because the answer can come (and the connection close)
	// while the client is still writing, which an HTTP client reports as
	// a reset rather than the answer.
	huge, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer huge.Close()
	huge.SetDeadline(time.Now().Add(5 * time.Second))
	go fmt.Fprintf(huge, "PUT /v1/kv/huge HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s",
		adminSecret, 1<<20+1, strings.Repeat("v", 1<<20+1))
	if resp, err := http.ReadResponse(bufio.NewReader(huge), nil); err != nil || resp.StatusCode != 413 {
		t.Fatalf("authorized PUT over the 1 MiB limit = %v, %v; want 413", resp, err)
	}
}
