package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemgate/idemgate/tracing"
)

// Tracing (Config.Tracer; package tracing exports the spans). A request
// gets a server span, the child of the traceparent it came with (a trace
// of its own when none parses); the store's begin and complete are its
// children (package raftstore makes them from the context the request's
// store calls carry), and so is the call to the upstream, whose span is
// the parent the upstream is told of. The span carries the route, the
// Idempotency-Status answered, and a digest of the record key: never the
// key, which may be a payment's reference.
//
// With a nil Tracer every step here is skipped: nothing is read, set or
// allocated, and a replay allocates nothing (allocation_test.go).

// Span attributes beside OpenTelemetry's HTTP ones.
const (
	attrRoute   = "idemgate.route"
	attrStatus  = "idemgate.idempotency.status"
	attrKeyHash = "idemgate.key.hash"
)

// serve is the listener's handler: Handle, inside a server span when
// tracing is on.
func (g *Gateway) serve(ctx *fasthttp.RequestCtx) {
	if g.cfg.Tracer == nil {
		g.Handle(ctx)
		return
	}
	// Named by its route once it is known (traceRecord): a name built
	// here would cost every request, sampled or not.
	span := tracing.StartServer(g.cfg.Tracer, ctx, "gateway")
	g.Handle(ctx)
	var attrs []attribute.KeyValue
	if span.IsRecording() {
		attrs = append(attrs, attribute.String("url.path", string(ctx.Path())))
		if st := ctx.Response.Header.Peek(statusHeader); len(st) > 0 {
			attrs = append(attrs, attribute.String(attrStatus, string(st)))
		}
	}
	tracing.EndServer(ctx, span, attrs...)
}

// traceContext is the context of the request's span, for the store calls
// it makes: context.Background() when tracing is off.
func (g *Gateway) traceContext(ctx *fasthttp.RequestCtx) context.Context {
	if g.cfg.Tracer == nil {
		return context.Background()
	}
	return tracing.RequestContext(ctx)
}

// traceRecord names the request's route and its record key's digest on
// its span, once read has read them.
func (q *request) traceRecord(rk []byte) {
	if q.g.cfg.Tracer == nil {
		return
	}
	span := trace.SpanFromContext(q.tc)
	if !span.IsRecording() {
		return
	}
	span.SetName("gateway " + q.r.name)
	span.SetAttributes(attribute.String(attrRoute, q.r.name), attribute.String(attrKeyHash, keyHash(rk)))
}

// keyHash is the digest of a record key (route scope, tenant, key) a span
// carries: the first 16 bytes of its SHA-256, in hex. It tells one key's
// requests from another's across spans and logs without saying the key.
func keyHash(rk []byte) string {
	sum := sha256.Sum256(rk)
	return hex.EncodeToString(sum[:16])
}

// startUpstream starts the span of a call to the upstream, the child of
// the request's, and tells the upstream of it (traceparent, tracestate);
// nil when tracing is off.
func (g *Gateway) startUpstream(ctx *fasthttp.RequestCtx) trace.Span {
	if g.cfg.Tracer == nil {
		return nil
	}
	tc, span := g.cfg.Tracer.Start(g.traceContext(ctx), "upstream", trace.WithSpanKind(trace.SpanKindClient))
	tracing.Inject(tc, &ctx.Request.Header)
	return span
}

// endUpstream ends an upstream call's span with its outcome.
func endUpstream(span trace.Span, resp *fasthttp.Response, err error) {
	if span == nil {
		return
	}
	switch {
	case err != nil:
		span.SetStatus(codes.Error, upstreamErrorClass(err))
	case span.IsRecording():
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode()))
		if resp.StatusCode() >= 500 {
			span.SetStatus(codes.Error, "")
		}
	}
	span.End()
}
