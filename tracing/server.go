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

// Serve runs handle inside a server span named name, the child of the
// request's traceparent (a trace of its own when none parses); while
// handle runs, RequestContext(ctx) is the span's context. The caller sets
// the answer's attributes on the span it returns and ends it (EndServer).
func Serve(t trace.Tracer, ctx *fasthttp.RequestCtx, name string, handle func()) trace.Span {
	parent := Extract(context.Background(), &ctx.Request.Header)
	tc, span := t.Start(parent, name, trace.WithSpanKind(trace.SpanKindServer))
	ctx.SetUserValue(userKey, tc)
	defer ctx.RemoveUserValue(userKey)
	handle()
	return span
}

// RequestContext is the context of the request's server span while Serve
// runs its handler; context.Background() outside one.
func RequestContext(ctx *fasthttp.RequestCtx) context.Context {
	if tc, ok := ctx.UserValue(userKey).(context.Context); ok {
		return tc
	}
	return context.Background()
}

// EndServer ends a server span with the request's method and its answer's
// status code (an error status for a 5xx), and attrs.
func EndServer(span trace.Span, method string, resp *fasthttp.Response, attrs ...attribute.KeyValue) {
	if span.IsRecording() {
		code := resp.StatusCode()
		span.SetAttributes(attribute.String("http.request.method", method), attribute.Int("http.response.status_code", code))
		span.SetAttributes(attrs...)
		if code >= 500 {
			span.SetStatus(codes.Error, "")
		}
	}
	span.End()
}
