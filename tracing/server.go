package tracing

import (
	"context"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The server span of a fasthttp request, as the faces make it.

// userKey is the user value under which a request's RequestCtx holds the
// context of its server span while its handler runs.
const userKey = "idemgate.trace"

// StartServer starts the request's server span named name, the child of
// its traceparent (a trace of its own when none parses); until EndServer,
// RequestContext(ctx) is the span's context.
func StartServer(t trace.Tracer, ctx *fasthttp.RequestCtx, name string) trace.Span {
	parent := Extract(context.Background(), &ctx.Request.Header)
	tc, span := t.Start(parent, name, trace.WithSpanKind(trace.SpanKindServer))
	ctx.SetUserValue(userKey, tc)
	return span
}

// RequestContext is the context of the request's server span between
// StartServer and EndServer; context.Background() outside one.
func RequestContext(ctx *fasthttp.RequestCtx) context.Context {
	if tc, ok := ctx.UserValue(userKey).(context.Context); ok {
		return tc
	}
	return context.Background()
}

// EndServer ends a request's server span, with the request's method, its
// answer's status code (an error status for a 5xx), and attrs, which the
// caller builds only for a span that records (span.IsRecording).
func EndServer(ctx *fasthttp.RequestCtx, span trace.Span, attrs ...attribute.KeyValue) {
	ctx.RemoveUserValue(userKey)
	if span.IsRecording() {
		code := ctx.Response.StatusCode()
		span.SetAttributes(attribute.String("http.request.method", string(ctx.Method())), attribute.Int("http.response.status_code", code))
		span.SetAttributes(attrs...)
		if code >= 500 {
			span.SetStatus(codes.Error, "")
		}
	}
	span.End()
}
