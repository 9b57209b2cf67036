//go:build !race

package gateway

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestReplayUntracedAllocatesNothing: with tracing off (no Tracer), the
// listener's handler adds nothing to a replay's allocations: none.
func TestReplayUntracedAllocatesNothing(t *testing.T) {
	gc := startGateways(t, 1)
	g := gc.gws[0]
	if r := do(t, "POST", gc.gwURLs[0]+"/pay", `{"amount":1}`, "Idempotency-Key", "hot-untraced", "X-User-Id", "u1"); r.Status != 201 {
		t.Fatalf("first = %d %s", r.Status, r.Body)
	}
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI("/pay")
	req.Header.Set("Idempotency-Key", "hot-untraced")
	req.Header.Set("X-User-Id", "u1")
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	req.SetBodyString(`{"amount":1}`)
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil)
	g.serve(&ctx)
	if string(ctx.Response.Header.Peek("Idempotent-Replayed")) != "true" {
		t.Fatalf("replay = %d %q", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	if allocs := testing.AllocsPerRun(500, func() {
		ctx.Response.Reset()
		g.serve(&ctx)
	}); allocs != 0 {
		t.Errorf("an untraced replay allocates %.1f times, want 0", allocs)
	}
}
