package gateway

import (
	"net"
	"strconv"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkHandle measures Handle in process, with no client connection
// in the way, on one gateway over the in-memory store:
//
//	replay  a completed key, answered from the replay cache
//	first   a fresh key: begin, the upstream on loopback, complete
//
//	go test -run XXX -bench Handle ./gateway
func BenchmarkHandle(b *testing.B) {
	gc := startGateways(b, 1)
	g := gc.gws[0]
	request := func(key string) *fasthttp.RequestCtx {
		var ctx fasthttp.RequestCtx
		var req fasthttp.Request
		req.Header.SetMethod("POST")
		req.SetRequestURI("/pay")
		req.Header.SetHost("gateway.test")
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("X-User-Id", "bench")
		req.SetBodyString(`{"amount":100,"currency":"eur"}`)
		ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil)
		return &ctx
	}
	b.Run("replay", func(b *testing.B) {
		g.Handle(request("bench-replay"))
		ctx := request("bench-replay")
		b.ReportAllocs()
		for b.Loop() {
			ctx.Response.Reset()
			g.Handle(ctx)
		}
		if string(ctx.Response.Header.Peek("Idempotent-Replayed")) != "true" {
			b.Fatalf("replay = %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	})
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			ctx := request("bench-first-" + strconv.Itoa(i))
			g.Handle(ctx)
			if ctx.Response.StatusCode() != 201 {
				b.Fatalf("first = %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
		}
	})
}
