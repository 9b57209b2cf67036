package gateway

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// secret is what a client's Authorization header holds: no answer and no
// log line may ever contain it.
const secret = "s3cr3t-B34R3R-t0k3n"

// TestRefusedRequestsNeverEchoHeaders: requests fasthttp refuses before a
// handler runs, each carrying a secret in Authorization, get a problem
// document with a fixed detail and the right status on both listeners; the
// secret is in no answer and in no log line (fasthttp's error texts quote
// the raw request).
func TestRefusedRequestsNeverEchoHeaders(t *testing.T) {
	t.Parallel()
	logs := &testsupport.Logs{}
	gc := startGatewaysOver(t, nil, []nodeStore{memstore.New(t)}, "", func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.ReadTimeout = 500 * time.Millisecond
	})
	auth := "Authorization: Bearer " + secret + "\r\n"
	huge := "X-Big: " + strings.Repeat("b", 16<<10) + "\r\n"
	cases := []struct {
		name    string
		raw     string
		status  int
		detail  string
		gwOnly  bool // the API listener of the harness has no read timeout
		anyBody bool // answered by the handler's own body check: its detail is its own
	}{
		{"garbage request line", "GARBAGE " + secret + "\r\n" + auth + "\r\n", 400, "malformed request", false, false},
		{"method with a bad byte", "P@ST /pay HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + "\r\n", 400, "malformed request", false, false},
		{"unsupported HTTP version", "GET /pay HTTP/9." + secret + "\r\nHost: 127.0.0.1\r\n" + auth + "\r\n", 400, "malformed request", false, false},
		{"control byte in Authorization", "GET /pay HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + secret + "\x01\r\n\r\n", 400, "malformed request", false, false},
		{"header without a colon", "GET /pay HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + "NoColon\r\n\r\n", 400, "malformed request", false, false},
		{"bad Content-Length", "POST /pay HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + "Content-Length: 12x\r\n\r\n", 400, "malformed request", false, false},
		{"two Content-Lengths", "POST /pay HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400, "malformed request", false, false},
		{"unsupported Transfer-Encoding", "POST /pay HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + "Transfer-Encoding: gzip-" + secret + "\r\n\r\n", 400, "", false, true},
		{"invalid URI", "GET http://[::1" + secret + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + "\r\n", 400, "malformed request", false, false},
		{"header block over the limit", "GET /pay HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + huge + "\r\n", 431, "request header too large", false, false},
		{"secret after a huge header", "GET /pay HTTP/1.1\r\nHost: 127.0.0.1\r\n" + huge + auth + "\r\n", 431, "request header too large", false, false},
		{"body over the limit", "POST /pay HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + "Content-Length: 1073741824\r\n\r\n" + strings.Repeat("x", 16<<10), 413, "", false, true},
		{"secret in a forbidden trailer", "POST /pay HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: k\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nAuthorization: Bearer " + secret + "\x01\r\n\r\n", 400, "", false, true},
		{"secret in a trailer value", "POST /pay HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: k\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-Token: Bearer " + secret + "\x01\r\n\r\n", 400, "malformed request", false, false},
		{"secret in a bad chunk size", "POST /pay HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: k\r\nTransfer-Encoding: chunked\r\n\r\n" + secret + "\r\n{}\r\n0\r\n\r\n", 400, "", false, true},
		{"request not received in time", "POST /pay HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + "X-Slow: ", 408, "request timed out", true, false},
	}
	listeners := map[string]string{
		"gateway": strings.TrimPrefix(gc.gwURLs[0], "http://"),
		"api":     strings.TrimPrefix(gc.apiURLs[0], "http://"),
	}
	for lname, addr := range listeners {
		for _, tc := range cases {
			if tc.gwOnly && lname != "gateway" {
				continue
			}
			r, ok := rawReply(t, addr, tc.raw, 0)
			if !ok {
				t.Errorf("%s, %s: no answer", lname, tc.name)
				continue
			}
			if strings.Contains(r.Body, secret) || strings.Contains(r.Body, "Bearer") {
				t.Errorf("%s, %s: the answer echoes the request: %s", lname, tc.name, r.Body)
			}
			for k, vs := range r.Header {
				if strings.Contains(strings.Join(vs, " "), secret) {
					t.Errorf("%s, %s: header %s echoes the secret", lname, tc.name, k)
				}
			}
			var p httpx.Problem
			if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" || json.Unmarshal([]byte(r.Body), &p) != nil {
				t.Errorf("%s, %s: Content-Type %q, body %q: want a problem document", lname, tc.name, ct, r.Body)
				continue
			}
			if r.Status != tc.status || p.Status != tc.status || (!tc.anyBody && p.Detail != tc.detail) {
				t.Errorf("%s, %s: %d, problem %+v; want %d %q", lname, tc.name, r.Status, p, tc.status, tc.detail)
			}
		}
	}
	if gc.up.Calls.Load() != 0 {
		t.Errorf("refused requests reached the upstream %d times", gc.up.Calls.Load())
	}
	if _, err := logs.JSON(); err != nil {
		t.Error(err)
	}
	if out := logs.String(); strings.Contains(out, secret) {
		t.Errorf("a log line holds the secret:\n%s", out)
	}
	if logs.Count("request refused") == 0 {
		t.Error("no request refused was logged at debug")
	}
}
