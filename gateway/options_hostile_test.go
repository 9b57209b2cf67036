package gateway

import (
	"strings"
	"testing"
)

// TestHostileRouteOptions: bodies a JSON route cannot read, keys that fail
// a route's format, oversized bodies. Each gets its exact answer, and none
// reaches the upstream.
func TestHostileRouteOptions(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 1)
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	huge := `{"idempotency_key":"h1","pad":"` + strings.Repeat("x", 70<<10) + `"}` // over max_request_body (64 KiB)
	type hostile struct {
		name, path, body, key string
		status                int
		ptype                 string
	}
	tests := []hostile{
		{"fingerprint json: not JSON", "/jsonfp", "amount=5", "k1", 400, "invalid-json"},
		{"fingerprint json: empty body", "/jsonfp", "", "k1", 400, "invalid-json"},
		{"fingerprint json: cut short", "/jsonfp", `{"a":`, "k1", 400, "invalid-json"},
		{"fingerprint json: two values", "/jsonfp", `{"a":1}{"a":2}`, "k1", 400, "invalid-json"},
		{"fingerprint json: a member twice", "/jsonfp", `{"a":1,"a":2}`, "k1", 400, "invalid-json"},
		{"fingerprint json: a member twice, deep", "/jsonfp", `{"m":{"r":1,"r":1}}`, "k1", 400, "invalid-json"},
		{"fingerprint json: nested too deep", "/jsonfp", deep, "k1", 400, "invalid-json"},
		{"fingerprint json: invalid UTF-8 escape", "/jsonfp", `{"a":"\ud800\x"}`, "k1", 400, "invalid-json"},
		{"fingerprint json: NUL byte", "/jsonfp", "{\"a\":\"\x00\"}", "k1", 400, "invalid-json"},
		{"fingerprint json: no key, bad body", "/jsonfp", "{", "", 400, "missing-key"},
		{"key json: not JSON", "/jsonkey", "idempotency_key=k", "", 400, "invalid-json"},
		{"key json: member missing", "/jsonkey", `{"amount":5}`, "", 400, "missing-key"},
		{"key json: null", "/jsonkey", `{"idempotency_key":null}`, "", 400, "missing-key"},
		{"key json: a number", "/jsonkey", `{"idempotency_key":42}`, "", 400, "invalid-key"},
		{"key json: an object", "/jsonkey", `{"idempotency_key":{"k":"v"}}`, "", 400, "invalid-key"},
		{"key json: empty", "/jsonkey", `{"idempotency_key":""}`, "", 400, "invalid-key"},
		{"key json: control character", "/jsonkey", `{"idempotency_key":"a\nb"}`, "", 400, "invalid-key"},
		{"key json: not ASCII", "/jsonkey", `{"idempotency_key":"caf\u00e9"}`, "", 400, "invalid-key"},
		{"key json: too long", "/jsonkey", `{"idempotency_key":"` + strings.Repeat("k", 256) + `"}`, "", 400, "invalid-key"},
		{"key json: two keys", "/jsonkey", `{"idempotency_key":"a","idempotency_key":"b"}`, "", 400, "invalid-json"},
		{"key json: huge body", "/jsonkey", huge, "", 413, "body-too-large"},
		{"fingerprint json: huge body", "/jsonfp", huge, "k1", 413, "body-too-large"},
		{"key_format uuid: not a UUID", "/uuidkey", "{}", "not-a-uuid", 400, "invalid-key"},
		{"key_format uuid: braces", "/uuidkey", "{}", "{8c3a7a54-0a4b-4a8e-9d65-3f1f0c6f4a10}", 400, "invalid-key"},
		{"key_format uuid: newline smuggled", "/uuidkey", "{}", `"8c3a7a54-0a4b-4a8e-9d65-3f1f0c6f4a10\"x"`, 400, "invalid-key"},
	}
	for _, tt := range tests {
		var hdr []string
		if tt.key != "" {
			hdr = []string{"Idempotency-Key", tt.key}
		}
		r := do(t, "POST", gc.gwURLs[0]+tt.path, tt.body, hdr...)
		if r.Status != tt.status || r.ProblemType(t) != tt.ptype {
			t.Errorf("%s: %d %s, want %d %s", tt.name, r.Status, r.Body, tt.status, tt.ptype)
		}
		if strings.Contains(r.Body, "\\u0000") || strings.Contains(r.Body, "pad") {
			t.Errorf("%s: the answer quotes the body: %.200s", tt.name, r.Body)
		}
	}
	// Keys from the query for key_format: the same checks.
	for _, q := range []string{"k=", "k=order-", "k=ORDER-123", "k=order-123&k=order-124", "k=order-123%0A"} {
		r := do(t, "POST", gc.gwURLs[0]+"/fmtkey?"+q, "{}")
		if r.Status != 400 {
			t.Errorf("/fmtkey?%s = %d %s, want 400", q, r.Status, r.Body)
		}
	}
	if n := gc.up.Calls.Load(); n != 0 {
		t.Fatalf("hostile requests reached the upstream %d times", n)
	}
}
