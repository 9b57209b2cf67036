package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/idemgate/idemgate/internal/memstore"
)

func send(t testing.TB, url, body string, hdr ...string) reply {
	t.Helper()
	return do(t, "POST", url, body, hdr...)
}

// TestExactlyOnceUnderDuplicates: 200 keys, each sent 2-5 times at once to
// random nodes: one upstream execution per key, every replay byte-identical
// and marked, Set-Cookie and Date not replayed.
func TestExactlyOnceUnderDuplicates(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 3)
	const keys = 200
	type answer struct {
		key string
		r   reply
	}
	var mu sync.Mutex
	var answers []answer
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for k := 0; k < keys; k++ {
		key := fmt.Sprintf("order-%d", k)
		copies := 2 + rand.IntN(4)
		for c := 0; c < copies; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				r := send(t, gc.gwURLs[rand.IntN(3)]+"/pay", `{"amount":100}`, "Idempotency-Key", key, "X-User-Id", "u1")
				mu.Lock()
				answers = append(answers, answer{key, r})
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	first := map[string]reply{}
	for _, a := range answers {
		switch {
		case a.r.Status == 201 && a.r.Header.Get("Idempotent-Replayed") == "":
			if _, dup := first[a.key]; dup {
				t.Fatalf("%s answered as a first request twice", a.key)
			}
			first[a.key] = a.r
			if a.r.Header.Get("Set-Cookie") == "" {
				t.Fatalf("%s: the first answer lost the upstream's Set-Cookie", a.key)
			}
		case a.r.Status == 201:
		case a.r.Status == 409 && a.r.ProblemType(t) == "in-progress":
			if a.r.Header.Get("Retry-After") == "" {
				t.Fatalf("409 in-progress without Retry-After")
			}
		default:
			t.Fatalf("%s: unexpected answer %d %s", a.key, a.r.Status, a.r.Body)
		}
		if a.r.Header.Get("Idempotency-Expires") == "" {
			t.Fatalf("%s: answer %d without Idempotency-Expires", a.key, a.r.Status)
		}
	}
	for k := 0; k < keys; k++ {
		key := fmt.Sprintf("order-%d", k)
		if n := gc.up.Executions(key); n != 1 {
			t.Fatalf("%s executed %d times upstream, want 1", key, n)
		}
		f, ok := first[key]
		if !ok {
			t.Fatalf("%s: no client saw the first answer", key)
		}
		for _, a := range answers {
			if a.key == key && a.r.Status == 201 && a.r.Body != f.Body {
				t.Fatalf("%s: replay body %q differs from the first %q", key, a.r.Body, f.Body)
			}
		}
		// A later retry on every node replays the same bytes.
		for _, u := range gc.gwURLs {
			r := send(t, u+"/pay", `{"amount":100}`, "Idempotency-Key", key, "X-User-Id", "u1")
			if r.Status != 201 || r.Body != f.Body || r.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("%s: retry = %d %q replayed=%q, want the first body replayed", key, r.Status, r.Body, r.Header.Get("Idempotent-Replayed"))
			}
			if r.Header.Get("Set-Cookie") != "" || r.Header.Get("X-Execution") != f.Header.Get("X-Execution") {
				t.Fatalf("%s: replay headers wrong: %v", key, r.Header)
			}
		}
	}
	if int(gc.up.Calls.Load()) != keys {
		t.Fatalf("upstream ran %d times for %d keys", gc.up.Calls.Load(), keys)
	}
}

func TestInFlightConflictAndWait(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 3)
	gc.up.Delay.Store(int64(700 * time.Millisecond))
	for _, tc := range []struct {
		path string
		wait bool
	}{{"/slow", false}, {"/wait", true}} {
		key := "k" + tc.path
		firstDone := make(chan reply, 1)
		go func() { firstDone <- send(t, gc.gwURLs[0]+tc.path, "b", "Idempotency-Key", key) }()
		time.Sleep(250 * time.Millisecond)
		dup := send(t, gc.gwURLs[1]+tc.path, "b", "Idempotency-Key", key)
		first := <-firstDone
		if first.Status != 201 {
			t.Fatalf("%s first = %d %s", tc.path, first.Status, first.Body)
		}
		if tc.wait {
			if dup.Status != 201 || dup.Body != first.Body || dup.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("%s duplicate with wait = %d %q, want the replay of %q", tc.path, dup.Status, dup.Body, first.Body)
			}
		} else if dup.Status != 409 || dup.ProblemType(t) != "in-progress" || dup.Header.Get("Retry-After") == "" || dup.Header.Get("Idempotency-Expires") == "" {
			t.Fatalf("%s duplicate = %d %v %s, want 409 in-progress with Retry-After", tc.path, dup.Status, dup.Header, dup.Body)
		}
		if n := gc.up.Executions(key); n != 1 {
			t.Fatalf("%s executed %d times", key, n)
		}
	}
}

func TestKeyReuseAndTenants(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 3)
	u := gc.gwURLs
	if r := send(t, u[0]+"/pay", "A", "Idempotency-Key", "k1", "X-User-Id", "alice"); r.Status != 201 {
		t.Fatalf("first = %d", r.Status)
	}
	r := send(t, u[1]+"/pay", "B", "Idempotency-Key", "k1", "X-User-Id", "alice")
	if r.Status != 422 || r.ProblemType(t) != "key-reuse" || r.Header.Get("Idempotency-Expires") == "" {
		t.Fatalf("same key, other body = %d %s", r.Status, r.Body)
	}
	// The same key under another tenant is another record.
	r = send(t, u[2]+"/pay", "A", "Idempotency-Key", "k1", "X-User-Id", "bob")
	if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" || !strings.Contains(r.Body, `"user":"bob"`) {
		t.Fatalf("other tenant = %d %s", r.Status, r.Body)
	}
	if n := gc.up.Executions("k1"); n != 2 {
		t.Fatalf("k1 executed %d times, want once per tenant", n)
	}
	// An sf-string names the same key as the bare token.
	r = send(t, u[1]+"/pay", "A", "Idempotency-Key", `"k1"`, "X-User-Id", "alice")
	if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("sf-string key = %d %v", r.Status, r.Header)
	}
	// Tenant from a digest of Authorization; key from the query string.
	a := do(t, "PUT", u[0]+"/orders/9?key=q1", "x", "Authorization", "Bearer one")
	b := do(t, "PUT", u[1]+"/orders/9?key=q1", "x", "Authorization", "Bearer two")
	c := do(t, "PUT", u[2]+"/orders/9?key=q1", "x", "Authorization", "Bearer one")
	if a.Status != 201 || b.Status != 201 || b.Header.Get("Idempotent-Replayed") != "" || c.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("authorization tenants: %d/%q %d/%q %d/%q", a.Status, a.Header.Get("Idempotent-Replayed"),
			b.Status, b.Header.Get("Idempotent-Replayed"), c.Status, c.Header.Get("Idempotent-Replayed"))
	}
	// Another path under the same key is another request.
	if r := do(t, "PUT", u[0]+"/orders/10?key=q1", "x", "Authorization", "Bearer one"); r.Status != 422 {
		t.Fatalf("same key on another path = %d, want 422", r.Status)
	}
}

func TestFormTokenRace(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 3)
	r := send(t, gc.gwURLs[0]+"/_idem/tokens?scope=form", "")
	if r.Status != 201 {
		t.Fatalf("issue via gateway = %d %s", r.Status, r.Body)
	}
	var tok struct{ Token string }
	json.Unmarshal([]byte(r.Body), &tok)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Different idempotency keys: only the token stops them.
			r := send(t, gc.gwURLs[i%3]+"/form", "pay", "Idempotency-Key", fmt.Sprint("form-", i), "Form-Token", tok.Token)
			label := fmt.Sprint(r.Status)
			if r.Status == 409 {
				label += " " + r.ProblemType(t)
			}
			mu.Lock()
			codes[label]++
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	if codes["201"] != 1 || codes["409 token-used"] != 31 || gc.up.Calls.Load() != 1 {
		t.Fatalf("token race answers %v, upstream calls %d; want one 201 and 31 token-used", codes, gc.up.Calls.Load())
	}
	if r := send(t, gc.gwURLs[1]+"/form", "pay", "Idempotency-Key", "no-token"); r.Status != 400 || r.ProblemType(t) != "missing-token" {
		t.Fatalf("no token = %d %s", r.Status, r.Body)
	}
	// The winner's retry replays; it is not refused as token-used.
	var winner string
	for i := 0; i < 32; i++ {
		if gc.up.Executions(fmt.Sprint("form-", i)) == 1 {
			winner = fmt.Sprint("form-", i)
		}
	}
	r = send(t, gc.gwURLs[2]+"/form", "pay", "Idempotency-Key", winner, "Form-Token", tok.Token)
	if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("winner's retry = %d %s, want its replay", r.Status, r.Body)
	}
	// An optional-token route without key or token passes through.
	if r := send(t, gc.gwURLs[0]+"/optional", "x"); r.Status != 201 {
		t.Fatalf("optional route without token = %d", r.Status)
	}
}

func TestReleaseStoreAndErrors(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 3)
	u := gc.gwURLs
	// Statuses in release_statuses are answered, not stored: a retry runs.
	gc.up.Status.Store("/release", 409)
	for i := 0; i < 2; i++ {
		if r := send(t, u[i]+"/release", "x", "Idempotency-Key", "rel"); r.Status != 409 || r.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("released status attempt %d = %d %v", i, r.Status, r.Header)
		}
	}
	if n := gc.up.Executions("rel"); n != 2 {
		t.Fatalf("released key executed %d times, want 2", n)
	}
	gc.up.Status.Store("/pay", 503)
	send(t, u[0]+"/pay", "x", "Idempotency-Key", "busy")
	gc.up.Status.Store("/pay", 500) // 5xx other than 503 is stored, as Stripe does
	r1 := send(t, u[1]+"/pay", "x", "Idempotency-Key", "busy")
	r2 := send(t, u[2]+"/pay", "x", "Idempotency-Key", "busy")
	if r1.Status != 500 || r2.Status != 500 || r2.Body != r1.Body || r2.Header.Get("Idempotent-Replayed") != "true" || gc.up.Executions("busy") != 2 {
		t.Fatalf("503 then 500: %d %d replayed=%q executions=%d", r1.Status, r2.Status, r2.Header.Get("Idempotent-Replayed"), gc.up.Executions("busy"))
	}
	gc.up.Status.Delete("/pay")
	// A body over max_stored_body is answered once; replays are refused.
	big := send(t, u[0]+"/big", "x", "Idempotency-Key", "big")
	again := send(t, u[1]+"/big", "x", "Idempotency-Key", "big")
	if big.Status != 201 || len(big.Body) != 4096 || again.Status != 409 || again.ProblemType(t) != "replay-unavailable" || gc.up.Executions("big") != 1 {
		t.Fatalf("big body: %d (%d bytes), retry %d %s", big.Status, len(big.Body), again.Status, again.Body)
	}
	// Set-Cookie replayed where the route allows it.
	send(t, u[0]+"/cookies", "x", "Idempotency-Key", "c1")
	if r := send(t, u[1]+"/cookies", "x", "Idempotency-Key", "c1"); r.Header.Get("Set-Cookie") != "session=secret" {
		t.Fatalf("allowed Set-Cookie not replayed: %v", r.Header)
	}
}

func TestUpstreamFailures(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 3)
	u := gc.gwURLs
	// Timeout after sending: 504, then in-progress, then outcome-unknown.
	gc.up.Delay.Store(int64(time.Second))
	if r := send(t, u[0]+"/unknown", "x", "Idempotency-Key", "u1"); r.Status != 504 || r.ProblemType(t) != "upstream-timeout" {
		t.Fatalf("slow upstream = %d %s, want 504", r.Status, r.Body)
	}
	if r := send(t, u[1]+"/unknown", "x", "Idempotency-Key", "u1"); r.Status != 409 || r.ProblemType(t) != "outcome-unknown" {
		t.Fatalf("after the processing deadline = %d %s, want 409 outcome-unknown", r.Status, r.Body)
	}
	// on_unknown: release lets the next retry run, with the same key.
	if r := send(t, u[0]+"/unknown-release", "x", "Idempotency-Key", "u2"); r.Status != 504 {
		t.Fatalf("slow upstream = %d", r.Status)
	}
	gc.up.Delay.Store(0)
	time.Sleep(400 * time.Millisecond)
	if r := send(t, u[2]+"/unknown-release", "x", "Idempotency-Key", "u2"); r.Status != 201 || gc.up.Executions("u2") != 2 {
		t.Fatalf("retry after unknown with release = %d, executions %d", r.Status, gc.up.Executions("u2"))
	}
	// Upstream down: 502, the key is released, the retry runs when it is back.
	gc.up.Close()
	r := send(t, u[1]+"/pay", "x", "Idempotency-Key", "down")
	if r.Status != 502 || r.ProblemType(t) != "upstream-unreachable" {
		t.Fatalf("upstream down = %d %s, want 502", r.Status, r.Body)
	}
	if r := send(t, u[0]+"/pay", "x", "Idempotency-Key", "down"); r.Status != 502 {
		t.Fatalf("retry while down = %d, want 502 again (the key was released)", r.Status)
	}
}

func TestPassthroughAndSuspects(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 3)
	r := do(t, "GET", gc.gwURLs[0]+"/anything?x=1", "")
	if r.Status != 201 || !strings.Contains(r.Body, `"key":""`) || r.Header.Get("X-Request-Id-Seen") == "" {
		t.Fatalf("passthrough = %d %s (request id %q)", r.Status, r.Body, r.Header.Get("X-Request-Id-Seen"))
	}
	if r := send(t, gc.gwURLs[1]+"/pay", "x", "X-User-Id", "u1"); r.Status != 400 || r.ProblemType(t) != "missing-key" {
		t.Fatalf("no key = %d %s", r.Status, r.Body)
	}
	// A client that makes a new key for its retry: no key can deduplicate it.
	send(t, gc.gwURLs[0]+"/pay", `{"amount":7}`, "Idempotency-Key", "first-key", "X-User-Id", "carol")
	send(t, gc.gwURLs[1]+"/pay", `{"amount":7}`, "Idempotency-Key", "second-key", "X-User-Id", "carol")
	if gc.up.Executions("second-key") != 1 {
		t.Fatal("on_suspect: flag must still forward")
	}
	list := do(t, "GET", gc.apiURLs[2]+"/v1/suspects", "")
	if !strings.Contains(list.Body, `"key":"second-key"`) || !strings.Contains(list.Body, `"earlier_key":"first-key"`) {
		t.Fatalf("suspects = %s", list.Body)
	}
	send(t, gc.gwURLs[0]+"/strict", `same`, "Idempotency-Key", "s1")
	r = send(t, gc.gwURLs[2]+"/strict", `same`, "Idempotency-Key", "s2")
	if r.Status != 409 || r.ProblemType(t) != "suspected-duplicate" || gc.up.Executions("s2") != 0 {
		t.Fatalf("on_suspect reject = %d %s", r.Status, r.Body)
	}
	m := do(t, "GET", gc.apiURLs[1]+"/metrics", "")
	for _, series := range []string{
		`idemgate_requests_total{outcome="missing_key",route="pay"} 1`,
		`idemgate_suspected_duplicates_total{route="pay"} 1`,
		`idemgate_request_duration_seconds_count{outcome="first",route="pay"} 1`,
		`idemgate_upstream_duration_seconds_count{route="pay"} 1`,
	} {
		if !strings.Contains(m.Body, series) {
			t.Fatalf("metric %s missing on the node that served it", series)
		}
	}
	if m := do(t, "GET", gc.apiURLs[0]+"/metrics", ""); !strings.Contains(m.Body, `idemgate_requests_total{outcome="passthrough",route=""} 1`) {
		t.Fatal("passthrough not counted")
	}
	// What `promtool check metrics` checks (it runs promlint).
	problems, err := promlint.New(strings.NewReader(m.Body)).Lint()
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// TestLeaderKilledNeverTwice: traffic on all nodes while the leader stops:
// no key ever executes twice, and every key that completed replays after.
func TestLeaderKilledNeverTwice(t *testing.T) {
	gc := startClusterGateways(t, 3, "")
	leader := gc.c.WaitLeader(5 * time.Second)
	var mu sync.Mutex
	got := map[string]reply{}
	var wg sync.WaitGroup
	// At least 2.5 s and 50 completed keys, at most 20 s: a busy machine
	// serves fewer keys a second, and the test needs enough to mean much.
	start := time.Now()
	more := func() bool {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		elapsed := time.Since(start)
		return elapsed < 20*time.Second && (elapsed < 2500*time.Millisecond || n < 50)
	}
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			client := &http.Client{Timeout: 10 * time.Second}
			for i := 0; more(); i++ {
				key := fmt.Sprintf("w%d-%d", w, i)
				node := (w + i) % 3
				for attempt := 0; attempt < 2; attempt++ { // every request is sent twice
					req, _ := http.NewRequest("POST", gc.gwURLs[node]+"/pay", strings.NewReader("x"))
					req.Header.Set("Idempotency-Key", key)
					resp, err := client.Do(req)
					if err != nil {
						continue // the node we asked was stopped
					}
					resp.Body.Close()
					if resp.StatusCode == 201 {
						mu.Lock()
						got[key] = reply{Status: 201}
						mu.Unlock()
					}
					node = (node + 1) % 3
				}
			}
		}(w)
	}
	time.Sleep(800 * time.Millisecond)
	gc.gws[leader].Shutdown(context.Background())
	gc.c.Stop(leader)
	wg.Wait()
	survivor := gc.gwURLs[(leader+1)%3]
	for key := range got {
		if n := gc.up.Executions(key); n != 1 {
			t.Fatalf("%s executed %d times", key, n)
		}
		if r := send(t, survivor+"/pay", "x", "Idempotency-Key", key); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%s after the kill = %d %s, want a replay", key, r.Status, r.Body)
		}
	}
	for key, n := range gc.up.ByKey() {
		if n > 1 {
			t.Fatalf("%s executed %d times", key, n)
		}
	}
	if len(got) < 50 {
		t.Fatalf("only %d keys completed: the run barely served", len(got))
	}
	t.Logf("%d keys completed, %d executions, none twice, leader %s stopped mid-run", len(got), gc.up.Calls.Load(), gc.c.Cfgs[leader].NodeID)
}

// TestForwardedHeaders: the upstream sees one X-Forwarded-For line, the
// client's own lines first and the address the gateway saw last (never a
// second line a client forged), and X-Forwarded-Proto as the gateway
// received the request, whatever the client claimed.
func TestForwardedHeaders(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 1)
	for _, path := range []string{"/pay", "/pay-direct"} { // idempotent and pass-through
		req, _ := http.NewRequest("POST", gc.gwURLs[0]+path, strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "xff-"+path)
		req.Header.Add("X-Forwarded-For", "6.6.6.6")
		req.Header.Add("X-Forwarded-For", "7.7.7.7")
		req.Header.Set("X-Forwarded-Proto", "https")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Forwarded-For-Seen"); got != "6.6.6.6, 7.7.7.7, 127.0.0.1" {
			t.Errorf("%s: upstream saw X-Forwarded-For %q, want one line ending in the client's address", path, got)
		}
		if got := resp.Header.Get("X-Forwarded-Proto-Seen"); got != "http" {
			t.Errorf("%s: upstream saw X-Forwarded-Proto %q, want http", path, got)
		}
	}
}

// TestTokenEndpointRateLimit: one address gets its burst of form tokens,
// then 429 with Retry-After; what it was refused was never stored.
func TestTokenEndpointRateLimit(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 1)
	codes := map[int]int{}
	var retryAfter string
	start := time.Now()
	for i := 0; i < 80; i++ {
		r := send(t, gc.gwURLs[0]+"/_idem/tokens?scope=form", "")
		codes[r.Status]++
		if r.Status == 429 {
			retryAfter = r.Header.Get("Retry-After")
		}
	}
	// The burst is 50; at 10/s more refill while the loop runs.
	most := 50 + int(10*time.Since(start).Seconds()) + 1
	if codes[201] < 50 || codes[201] > most || codes[429] != 80-codes[201] || codes[429] == 0 || retryAfter == "" {
		t.Fatalf("80 token requests from one address: %v (Retry-After %q), want 50-%d issued and the rest 429", codes, retryAfter, most)
	}
}

// TestCacheBoundCountsLocalCompletions: records this node completed itself
// count against the replay cache's bound like any other (they were counted
// as 0 bytes, so the bound never applied to them).
func TestCacheBoundCountsLocalCompletions(t *testing.T) {
	t.Parallel()
	gc := startGatewaysOver(t, nil, []nodeStore{memstore.New(t)}, "", func(c *Config) { c.CacheBytes = 8 << 10 })
	for i := 0; i < 60; i++ {
		if r := send(t, gc.gwURLs[0]+"/pay", `{"amount":1}`, "Idempotency-Key", fmt.Sprint("bound-", i), "X-User-Id", "u"); r.Status != 201 {
			t.Fatalf("request %d = %d", i, r.Status)
		}
	}
	c := gc.gws[0].cache
	c.mu.RLock()
	defer c.mu.RUnlock()
	sum := 0
	for _, e := range c.m {
		if e.size <= len(e.body) {
			t.Fatalf("a cached record sized %d for a %d-byte body", e.size, len(e.body))
		}
		sum += e.size
	}
	if sum != c.bytes || c.bytes > 8<<10 || len(c.m) == 60 {
		t.Fatalf("cache: %d entries, %d bytes counted, %d by their sizes; bound 8 KiB", len(c.m), c.bytes, sum)
	}
}

// TestReleaseIsVisibleWhereItWasAcknowledged: a completed key cached on
// every node is released by hand through a follower's API; the same request
// sent at once to that follower's gateway runs again (it was replayed from
// the follower's stale state before the release was applied there).
func TestReleaseIsVisibleWhereItWasAcknowledged(t *testing.T) {
	gc := startClusterGateways(t, 3, "")
	leader := gc.c.WaitLeader(5 * time.Second)
	f := (leader + 1) % 3
	for i := 0; i < 5; i++ {
		key := fmt.Sprint("release-", i)
		for n := 0; n < 3; n++ { // the first, then a replay on every node: all cache it
			if r := send(t, gc.gwURLs[n]+"/pay", `{"amount":1}`, "Idempotency-Key", key, "X-User-Id", "u"); r.Status != 201 {
				t.Fatalf("%s on node %d = %d", key, n, r.Status)
			}
		}
		if r := do(t, "DELETE", gc.apiURLs[f]+"/v1/records/pay/"+key+"?tenant=u", ""); r.Status != 200 {
			t.Fatalf("release of %s = %d %s", key, r.Status, r.Body)
		}
		r := send(t, gc.gwURLs[f]+"/pay", `{"amount":1}`, "Idempotency-Key", key, "X-User-Id", "u")
		if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" || gc.up.Executions(key) != 2 {
			t.Fatalf("%s after its release, on the node that acknowledged it: %d replayed=%q, %d executions; want a second execution",
				key, r.Status, r.Header.Get("Idempotent-Replayed"), gc.up.Executions(key))
		}
	}
}

// TestRouteAliases: a route with match: case-insensitive and
// trailing_slash: ignore takes the aliases its upstream serves as the route,
// and they share its records (one execution, the rest replays); a prefix
// route takes ids that need decoding after its prefix; requests no route
// protects, unambiguously, still pass through.
func TestRouteAliases(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 2)
	u := gc.gwURLs
	tests := []struct {
		name, method, path, key string
		status                  int
		replayed                bool
		executions              int // of key, after the request
	}{
		{"the route's alias first", "POST", "/LOOSE/", "a1", 201, false, 1},
		{"the route's own spelling replays", "POST", "/loose", "a1", 201, true, 1},
		{"a lowercase method replays", "post", "/Loose", "a1", 201, true, 1},
		{"prefix route, in another case and with a slash", "PUT", "/ITEMS/7/", "a2", 201, false, 1},
		{"prefix route, as spelled", "PUT", "/items/7", "a2", 201, true, 1},
		{"prefix route, its prefix without the slash", "POST", "/Items", "a3", 201, false, 1},
		{"prefix route, its prefix", "POST", "/items/", "a3", 201, true, 1},
		{"prefix route, an id that needs decoding", "POST", "/items/caf%C3%A9%20au%20lait", "a4", 201, false, 1},
		{"prefix route, the same id again", "POST", "/items/caf%C3%A9%20au%20lait", "a4", 201, true, 1},
		{"prefix route, a matrix parameter after the prefix", "POST", "/items/8;v=2", "a5", 201, false, 1},
		{"another method on a protected path passes through", "GET", "/pay", "p1", 201, false, 1},
		{"an unprotected path passes through", "POST", "/payment", "p2", 201, false, 1},
		{"an unprotected path that needs decoding passes through", "POST", "/static/a%20b;v=1/../c", "p3", 201, false, 1},
		{"and again: nothing is recorded", "POST", "/static/a%20b;v=1/../c", "p3", 201, false, 2},
	}
	for i, tt := range tests {
		r := do(t, tt.method, u[i%2]+tt.path, "{}", "Idempotency-Key", tt.key)
		replayed := r.Header.Get("Idempotent-Replayed") == "true"
		if r.Status != tt.status || replayed != tt.replayed || gc.up.Executions(tt.key) != tt.executions {
			t.Errorf("%s: %s %s = %d replayed=%v, %d executions of %s; want %d replayed=%v, %d executions (%s)",
				tt.name, tt.method, tt.path, r.Status, replayed, gc.up.Executions(tt.key), tt.key, tt.status, tt.replayed, tt.executions, r.Body)
		}
	}
}

// TestAuthorizationTenantNormalized: with tenant: authorization, the
// spellings of one credential RFC 9110 makes equal (the scheme in any
// case, any whitespace after it) are one tenant; the credential itself
// stays case-sensitive.
func TestAuthorizationTenantNormalized(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 2)
	tests := []struct {
		auth       string
		replayed   bool
		executions int
	}{
		{"Bearer abc", false, 1},
		{"bearer abc", true, 1},
		{"BEARER abc", true, 1},
		{"Bearer  abc", true, 1},
		{"Bearer \t abc", true, 1},
		{"Bearer abc ", true, 1},
		{"Bearer ABC", false, 2},
		{"Basic abc", false, 3},
		{"basic abc", true, 3},
	}
	for i, tt := range tests {
		r := do(t, "PUT", gc.gwURLs[i%2]+"/orders/1?key=auth-1", "x", "Authorization", tt.auth)
		replayed := r.Header.Get("Idempotent-Replayed") == "true"
		if r.Status != 201 || replayed != tt.replayed || gc.up.Executions("auth-1") != tt.executions {
			t.Errorf("Authorization %q: %d replayed=%v, %d executions; want replayed=%v, %d executions",
				tt.auth, r.Status, replayed, gc.up.Executions("auth-1"), tt.replayed, tt.executions)
		}
	}
}

// TestUpstreamAnswerSizes: an upstream answer with headers well over
// fasthttp's default 4 KiB read buffer is relayed and stored like any
// other. One the gateway cannot read whole (headers over
// max_response_header_bytes, a body over max_response_body) comes after
// the upstream acted: 502 upstream-response-too-large, stored as the
// record's answer and replayed to retries, never left in flight and never
// run twice; passing through, the 502 alone. It quotes nothing of the
// upstream's answer.
func TestUpstreamAnswerSizes(t *testing.T) {
	t.Parallel()
	m := memstore.New(t)
	gc := startGatewaysOver(t, nil, []nodeStore{m, m}, "", func(c *Config) { c.MaxResponseBody = 2 << 10 })
	tests := []struct {
		name, method, path, key string
		status                  int
		ptype                   string
		replayed                bool
	}{
		{"headers of 8 KiB", "POST", "/pay?fat=8", "fat-8", 201, "", false},
		{"their retry, on another node", "POST", "/pay?fat=8", "fat-8", 201, "", true},
		{"headers of 8 KiB, passing through", "GET", "/anything?fat=8", "", 201, "", false},
		{"headers of 200 KiB", "POST", "/pay?fat=200", "fat-200", 502, "upstream-response-too-large", false},
		{"their retry, on another node", "POST", "/pay?fat=200", "fat-200", 502, "upstream-response-too-large", true},
		{"and again", "POST", "/pay?fat=200", "fat-200", 502, "upstream-response-too-large", true},
		{"a body over max_response_body", "POST", "/big", "big-body", 502, "upstream-response-too-large", false},
		{"its retry, on another node", "POST", "/big", "big-body", 502, "upstream-response-too-large", true},
		{"headers of 200 KiB, passing through", "GET", "/anything?fat=200", "", 502, "upstream-response-too-large", false},
	}
	first := map[string]string{}
	for i, tt := range tests {
		r := do(t, tt.method, gc.gwURLs[i%2]+tt.path, "{}", "Idempotency-Key", tt.key)
		replayed := r.Header.Get("Idempotent-Replayed") == "true"
		ptype := ""
		if r.Status != 201 {
			ptype = r.ProblemType(t)
		}
		if r.Status != tt.status || ptype != tt.ptype || replayed != tt.replayed || r.Status == 502 && strings.Contains(r.Body, "fff") {
			t.Errorf("%s: %d %q replayed=%v %.300s; want %d %q replayed=%v", tt.name, r.Status, ptype, replayed, r.Body, tt.status, tt.ptype, tt.replayed)
		}
		if r.Status == 201 && len(r.Header.Get("X-Fat-7")) < 1000 {
			t.Errorf("%s: the 8 KiB of headers were not relayed", tt.name)
		}
		if tt.key == "" {
			continue
		}
		if f, ok := first[tt.key]; ok && r.Body != f {
			t.Errorf("%s: replayed %q, want the first answer %q", tt.name, r.Body, f)
		} else if !ok {
			first[tt.key] = r.Body
		}
		if n := gc.up.Executions(tt.key); n != 1 {
			t.Errorf("%s: %s executed %d times, want 1", tt.name, tt.key, n)
		}
	}
}
