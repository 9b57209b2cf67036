//go:build !race

package gateway

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// TestReplayAllocatesNothing: a replay of a completed key (the hot-key
// path) makes no heap allocation: key and tenant parsing, the record key,
// the fingerprint, the cache lookup and writing the stored answer.
func TestReplayAllocatesNothing(t *testing.T) {
	gc := startGateways(t, 1)
	if r := send(t, gc.gwURLs[0]+"/pay", `{"amount":1}`, "Idempotency-Key", "hot", "X-User-Id", "u1"); r.status != 201 {
		t.Fatalf("first = %d", r.status)
	}
	g := gc.gws[0]
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI("/pay")
	req.Header.Set("Idempotency-Key", "hot")
	req.Header.Set("X-User-Id", "u1")
	req.SetBodyString(`{"amount":1}`)
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, nil, nil)
	g.Handle(&ctx)
	if ctx.Response.StatusCode() != 201 || string(ctx.Response.Header.Peek("Idempotent-Replayed")) != "true" {
		t.Fatalf("replay = %d %q", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	allocs := testing.AllocsPerRun(500, func() {
		ctx.Response.Reset()
		g.Handle(&ctx)
	})
	if allocs != 0 {
		t.Fatalf("a replay allocates %.1f times, want 0", allocs)
	}
	if gc.up.calls.Load() != 1 {
		t.Fatalf("replays reached the upstream: %d calls", gc.up.calls.Load())
	}
}
