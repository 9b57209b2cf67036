package gateway

import (
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// rawUpstream is an upstream on a loopback port that answers every request
// with answer (nothing at all when it is empty, until the test ends).
func rawUpstream(t *testing.T, answer string) string {
	t.Helper()
	return serveLoopback(t, func(c net.Conn) {
		defer c.Close()
		buf := make([]byte, 64<<10)
		var got []byte
		for !strings.Contains(string(got), "\r\n\r\n") {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			got = append(got, buf[:n]...)
		}
		if answer == "" {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			c.Read(buf) // until the gateway gives up, or the test ends
			return
		}
		c.Write([]byte(answer))
	})
}

// TestUpstreamFailuresLoggedOnce: every upstream failure is answered with a
// fixed detail naming its class, and logged once at warn with the route,
// the key's scope, the class and what becomes of the record; neither
// answer nor log quotes the upstream's headers.
func TestUpstreamFailuresLoggedOnce(t *testing.T) {
	t.Parallel()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String()
	closed.Close()
	leaky := "HTTP/1.1 200 OK\r\nSet-Cookie: sid=" + secret + "\r\nX-Leak: " + secret + "\x01\r\nContent-Length: 0\r\n\r\n"
	for i, tc := range []struct {
		name, upstream, path string
		status               int
		class, record        string
	}{
		{"refused", refused, "/pay", 502, "connection refused", "released"},
		{"refused, passthrough", refused, "/elsewhere", 502, "connection refused", ""},
		{"malformed answer quoting a secret", rawUpstream(t, leaky), "/pay", 504, "unexpected error", "in_flight_until_processing_timeout"},
		{"no answer", rawUpstream(t, ""), "/pay", 504, "timeout", "in_flight_until_processing_timeout"},
	} {
		logs := &testsupport.Logs{}
		gc := startGatewaysOver(t, nil, []nodeStore{memstore.New(t)}, tc.upstream, func(c *Config) {
			c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
			c.UpstreamTimeout = 500 * time.Millisecond
		})
		key := "k-" + itoa(i)
		r, err := testsupport.Do("POST", gc.gwURLs[0]+tc.path, "{}", "Idempotency-Key", key, "X-User-Id", "u1")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var p httpx.Problem
		if r.Status != tc.status || json.Unmarshal([]byte(r.Body), &p) != nil || !strings.Contains(p.Detail, "("+tc.class+")") {
			t.Errorf("%s: %d %s, want %d with a detail naming (%s)", tc.name, r.Status, r.Body, tc.status, tc.class)
		}
		if strings.Contains(r.Body, secret) {
			t.Errorf("%s: the answer quotes the upstream: %s", tc.name, r.Body)
		}
		attrs := []string{"status", itoa(tc.status), "error_class", tc.class, "level", "WARN"}
		if tc.record != "" {
			attrs = append(attrs, "route", "pay", "scope", "pay", "key", key, "record", tc.record)
		} else {
			attrs = append(attrs, "passthrough", "true", "path", tc.path)
		}
		if n := logs.Count("upstream failed", attrs...); n != 1 {
			t.Errorf("%s: %d lines with %v, want 1; log:\n%s", tc.name, n, attrs, logs.String())
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("%s: the log quotes the upstream:\n%s", tc.name, logs.String())
		}
	}
}
