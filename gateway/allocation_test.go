//go:build !race

package gateway

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestReplayAllocatesNothing: a replay of a completed key (the hot-key
// path) makes no heap allocation: route matching, key and tenant parsing,
// the record key, the fingerprint, the cache lookup and writing the stored
// answer; for a request spelled as its route, for an alias the route takes
// (match: case-insensitive, trailing_slash: ignore), and for a key from the
// query string with a tenant from Authorization spelled otherwise than the
// first time.
func TestReplayAllocatesNothing(t *testing.T) {
	gc := startGateways(t, 1)
	g := gc.gws[0]
	tests := []struct {
		name, method, first, replay, key   string
		tenantHeader, tenant, replayTenant string
	}{
		{"exact route", "POST", "/pay", "/pay", "hot", "X-User-Id", "u1", "u1"},
		{"an alias of a route that takes it", "POST", "/loose", "/LOOSE/", "hot-alias", "X-User-Id", "u1", "u1"},
		{"prefix route", "PUT", "/items/7", "/items/7", "hot-prefix", "X-User-Id", "u1", "u1"},
		{"key from the query, tenant from Authorization", "PUT", "/orders/7?key=hot-auth", "/orders/7?key=hot-auth", "hot-auth", "Authorization", "Bearer abc", "bearer  abc"},
	}
	for i, tt := range tests {
		if r := do(t, tt.method, gc.gwURLs[0]+tt.first, `{"amount":1}`, "Idempotency-Key", tt.key, tt.tenantHeader, tt.tenant); r.Status != 201 {
			t.Fatalf("%s: first = %d %s", tt.name, r.Status, r.Body)
		}
		var req fasthttp.Request
		req.Header.SetMethod(tt.method)
		req.SetRequestURI(tt.replay)
		req.Header.Set("Idempotency-Key", tt.key)
		req.Header.Set(tt.tenantHeader, tt.replayTenant)
		req.SetBodyString(`{"amount":1}`)
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil) // a trusted proxy: the tenant header counts
		g.Handle(&ctx)
		if ctx.Response.StatusCode() != 201 || string(ctx.Response.Header.Peek("Idempotent-Replayed")) != "true" {
			t.Fatalf("%s: replay = %d %q", tt.name, ctx.Response.StatusCode(), ctx.Response.Body())
		}
		allocs := testing.AllocsPerRun(500, func() {
			ctx.Response.Reset()
			g.Handle(&ctx)
		})
		if allocs != 0 {
			t.Errorf("%s: a replay allocates %.1f times, want 0", tt.name, allocs)
		}
		if n := gc.up.Calls.Load(); n != int64(i+1) {
			t.Fatalf("%s: replays reached the upstream: %d calls", tt.name, n)
		}
	}
}
