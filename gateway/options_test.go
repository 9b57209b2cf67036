package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// keyProblemOf decodes an answer's problem document with its key fields.
func keyProblemOf(t *testing.T, r reply) keyProblem {
	t.Helper()
	var p keyProblem
	if err := json.Unmarshal([]byte(r.Body), &p); err != nil {
		t.Fatalf("problem document %q: %v", r.Body, err)
	}
	return p
}

// TestFingerprintJSON: with fingerprint: json a retry whose body differs
// only in member order, whitespace, string escapes or an ignored member is
// a retry (replayed); any other difference is a reuse of the key (422).
func TestFingerprintJSON(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 1)
	url := gc.gwURLs[0] + "/jsonfp"
	first := do(t, "POST", url, `{"a":1,"b":"x","items":[1,2,3],"meta":{"request_time":"t1","v":2}}`, "Idempotency-Key", "j1")
	if first.Status != 201 || first.Header.Get("Idempotency-Status") != "created" {
		t.Fatalf("first = %d %q %s", first.Status, first.Header.Get("Idempotency-Status"), first.Body)
	}
	retries := []string{
		`{"a":1,"b":"x","items":[1,2,3],"meta":{"request_time":"t1","v":2}}`,
		"{ \"meta\": {\"v\":2, \"request_time\":\"t2\"},\n \"items\":[1, 99, 3], \"b\":\"\\u0078\", \"a\":1 }",
		`{"items":[1,{"any":"thing"},3],"a":1,"b":"x","meta":{"v":2}}`,
	}
	for _, body := range retries {
		r := do(t, "POST", url, body, "Idempotency-Key", "j1")
		if r.Status != 201 || r.Body != first.Body || r.Header.Get("Idempotency-Status") != "replayed" {
			t.Errorf("retry %s = %d %q %s, want the replay", body, r.Status, r.Header.Get("Idempotency-Status"), r.Body)
		}
	}
	reuses := []string{
		`{"a":2,"b":"x","items":[1,2,3],"meta":{"request_time":"t1","v":2}}`,
		`{"a":1.0,"b":"x","items":[1,2,3],"meta":{"request_time":"t1","v":2}}`, // numbers as written
		`{"a":1,"b":"x","items":[1,2,3,4],"meta":{"request_time":"t1","v":2}}`,
		`{"a":1,"b":"x","items":[1,2,3],"meta":{"request_time":"t1","v":3}}`,
		`{"a":1,"b":"x","items":[1,2,3],"meta":{"request_time":"t1","v":2},"c":null}`,
	}
	for _, body := range reuses {
		r := do(t, "POST", url, body, "Idempotency-Key", "j1")
		if r.Status != 422 || r.ProblemType(t) != "key-reuse" || r.Header.Get("Idempotency-Status") != "key-reuse" {
			t.Errorf("reuse %s = %d %s, want 422 key-reuse", body, r.Status, r.Body)
			continue
		}
		if p := keyProblemOf(t, r); p.Key != "j1" || p.Instance != "/jsonfp" || p.Retryable {
			t.Errorf("reuse %s: problem = %+v, want key j1, instance /jsonfp, not retryable", body, p)
		}
	}
	if n := gc.up.Calls.Load(); n != 1 {
		t.Fatalf("the upstream was called %d times, want 1", n)
	}
}

// TestKeyFromJSONBody: key: json:/idempotency_key takes the key from the
// body, as Square's API does.
func TestKeyFromJSONBody(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 1)
	url := gc.gwURLs[0] + "/jsonkey"
	first := do(t, "POST", url, `{"idempotency_key":"sq-1","amount":5}`)
	if first.Status != 201 || !strings.Contains(first.Body, `"key":"sq-1"`) {
		t.Fatalf("first = %d %s, want 201 forwarded with Idempotency-Key sq-1", first.Status, first.Body)
	}
	again := do(t, "POST", url, `{"amount":5, "idempotency_key":"sq-1"}`)
	if again.Status != 201 || again.Body != first.Body || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry = %d %s, want the replay", again.Status, again.Body)
	}
	other := do(t, "POST", url, `{"idempotency_key":"sq-2","amount":5}`)
	if other.Status != 201 || other.Body == first.Body {
		t.Fatalf("another key = %d %s, want a second execution", other.Status, other.Body)
	}
	if n := gc.up.Calls.Load(); n != 2 {
		t.Fatalf("the upstream was called %d times, want 2", n)
	}
}

// TestKeyFormat: key_format and key_min_length refuse keys of another form
// with 400 invalid-key, before anything is recorded or forwarded.
func TestKeyFormat(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 1)
	tests := []struct {
		path, key string
		want      int
	}{
		{"/uuidkey", "8c3a7a54-0a4b-4a8e-9d65-3f1f0c6f4a10", 201},
		{"/uuidkey", "8C3A7A54-0A4B-4A8E-9D65-3F1F0C6F4A11", 201},
		{"/uuidkey", "order-42", 400},
		{"/uuidkey", "8c3a7a540a4b4a8e9d653f1f0c6f4a10", 400},
		{"/uuidkey", "8c3a7a54-0a4b-4a8e-9d65-3f1f0c6f4a10x", 400},
		{"/fmtkey?k=order-123", "", 201},
		{"/fmtkey?k=order-1", "", 400},    // 7 characters: under key_min_length
		{"/fmtkey?k=xorder-123", "", 400}, // the whole key must match
		{"/fmtkey?k=order-12a", "", 400},
	}
	for _, tt := range tests {
		var hdr []string
		if tt.key != "" {
			hdr = []string{"Idempotency-Key", tt.key}
		}
		r := do(t, "POST", gc.gwURLs[0]+tt.path, "{}", hdr...)
		if r.Status != tt.want {
			t.Errorf("%s key %q = %d %s, want %d", tt.path, tt.key, r.Status, r.Body, tt.want)
		}
		if tt.want == 400 && r.ProblemType(t) != "invalid-key" {
			t.Errorf("%s key %q: problem %s, want invalid-key", tt.path, tt.key, r.Body)
		}
	}
	if n := gc.up.Calls.Load(); n != 3 {
		t.Fatalf("the upstream was called %d times, want 3", n)
	}
}

// TestDropHeaders: a dropped header reaches the client once, with the
// first answer, and never with a replay.
func TestDropHeaders(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 1)
	first := do(t, "POST", gc.gwURLs[0]+"/dropped", "{}", "Idempotency-Key", "d1")
	if first.Status != 201 || first.Header.Get("X-Execution") == "" {
		t.Fatalf("first = %d, X-Execution %q: want the upstream's header", first.Status, first.Header.Get("X-Execution"))
	}
	replay := do(t, "POST", gc.gwURLs[0]+"/dropped", "{}", "Idempotency-Key", "d1")
	if replay.Status != 201 || replay.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay = %d %s", replay.Status, replay.Body)
	}
	if v := replay.Header.Get("X-Execution"); v != "" {
		t.Errorf("the replay carries X-Execution %q, a dropped header", v)
	}
	if replay.Header.Get("X-Request-Id-Seen") == "" {
		t.Errorf("the replay lost X-Request-Id-Seen, a header not dropped")
	}
}

// TestIdempotencyStatus: every answer about a record says its state.
func TestIdempotencyStatus(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 1)
	url := gc.gwURLs[0] + "/slow"
	done := make(chan reply, 1)
	go func() { done <- do(t, "POST", url, "{}", "Idempotency-Key", "s1", "X-Delay", "1s") }()
	testsupport.WaitFor(t, "the first request at the upstream", 10*time.Second, func() bool { return gc.up.Calls.Load() == 1 })
	dup := do(t, "POST", url, "{}", "Idempotency-Key", "s1")
	if got := dup.Header.Get("Idempotency-Status"); got != "in-progress" || dup.Header.Get("Retry-After") == "" {
		t.Errorf("duplicate in flight: Idempotency-Status %q, Retry-After %q", got, dup.Header.Get("Retry-After"))
	}
	if p := keyProblemOf(t, dup); !p.Retryable || p.Key != "s1" || p.Instance != "/slow" {
		t.Errorf("duplicate in flight: problem %+v, want retryable with key s1", p)
	}
	first := <-done
	if first.Header.Get("Idempotency-Status") != "created" {
		t.Errorf("first: Idempotency-Status %q, want created", first.Header.Get("Idempotency-Status"))
	}
	if r := do(t, "POST", url, "{}", "Idempotency-Key", "s1"); r.Header.Get("Idempotency-Status") != "replayed" {
		t.Errorf("replay: Idempotency-Status %q, want replayed", r.Header.Get("Idempotency-Status"))
	}
	// The upstream times out (processing_timeout 300ms): 504, the record in
	// flight, a retry with the key may still succeed.
	r := do(t, "POST", gc.gwURLs[0]+"/unknown", "{}", "Idempotency-Key", "u1", "X-Delay", "1s")
	if p := keyProblemOf(t, r); r.Status != 504 || r.Header.Get("Idempotency-Status") != "in-progress" || !p.Retryable || p.Key != "u1" {
		t.Errorf("timed out: %d %q %+v, want 504 in-progress, retryable, key u1", r.Status, r.Header.Get("Idempotency-Status"), p)
	}
	gc.up.Status.Store("/release", 409) // the route lists 409 in release_statuses
	if r := do(t, "POST", gc.gwURLs[0]+"/release", "{}", "Idempotency-Key", "r1"); r.Header.Get("Idempotency-Status") != "released" {
		t.Errorf("released: Idempotency-Status %q, want released", r.Header.Get("Idempotency-Status"))
	}
}

// TestClientJS: the browser helper is served with an ETag, revalidated
// with 304, and only to GET and HEAD.
func TestClientJS(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 1)
	url := gc.gwURLs[0] + ClientJSPath
	r := do(t, "GET", url, "")
	tag := r.Header.Get("ETag")
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/javascript") || tag == "" ||
		!strings.Contains(r.Body, "idem.fetch") && !strings.Contains(r.Body, "fetch: idemFetch") {
		t.Fatalf("GET = %d %q ETag %q", r.Status, r.Header.Get("Content-Type"), tag)
	}
	for _, inm := range []string{tag, "W/" + tag, `"other", ` + tag, "*"} {
		if r := do(t, "GET", url, "", "If-None-Match", inm); r.Status != http.StatusNotModified || r.Body != "" {
			t.Errorf("If-None-Match %s = %d, want 304", inm, r.Status)
		}
	}
	if r := do(t, "GET", url, "", "If-None-Match", `"other"`); r.Status != 200 {
		t.Errorf("If-None-Match of another tag = %d, want 200", r.Status)
	}
	if r := do(t, "POST", url, "x"); r.Status != 405 || r.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST = %d Allow %q, want 405", r.Status, r.Header.Get("Allow"))
	}
	if r := do(t, "GET", gc.gwURLs[0]+"/_idem/tokens?scope=form", ""); r.Status != 405 || r.Header.Get("Allow") != "POST" {
		t.Errorf("GET /_idem/tokens = %d Allow %q, want 405 Allow POST", r.Status, r.Header.Get("Allow"))
	}
	if n := gc.up.Calls.Load(); n != 0 {
		t.Fatalf("the upstream was called %d times", n)
	}
}
