package raftstore

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Tracing: the store makes no tracer of its own. A call whose context
// carries a recording span (a face's sampled request: package gateway,
// api, resp) gets child spans from that span's provider: the operation
// (store.begin, store.complete, store.release), and under it each attempt
// to reach the leader: raft.commit where this node leads (propose, commit,
// apply here), raft.forward where it forwards to the leader (the leader's
// commit and apply are inside that span's time; the forwarding protocol
// carries no trace context, so the leader makes no span of its own). A
// context without a recording span costs a context lookup, and nothing
// is allocated.

// tracerName is the instrumentation scope of the store's spans.
const tracerName = "github.com/idemgate/idemgate/raftstore"

// startSpan starts a child of the span ctx carries, when that span
// records; otherwise it returns ctx and nil.
func startSpan(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	return parent.TracerProvider().Tracer(tracerName).Start(ctx, name, trace.WithSpanKind(kind))
}

// endSpan ends a span startSpan started (nil: none), marking an error.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// forwardSpan starts the span of one attempt forwarded to leader.
func forwardSpan(ctx context.Context, leader string) (context.Context, trace.Span) {
	ctx, span := startSpan(ctx, "raft.forward", trace.SpanKindClient)
	if span != nil {
		span.SetAttributes(attribute.String("idemgate.leader", leader))
	}
	return ctx, span
}
