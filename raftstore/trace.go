package raftstore

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemgate/idemgate/raftstore/transport"
)

// Tracing. A call whose context carries a recording span (a face's
// sampled request: package gateway, api, resp) gets child spans from that
// span's provider: the operation (store.begin, store.complete,
// store.release), and under it each attempt to reach the leader:
// raft.commit where this node leads (propose, commit, apply here),
// raft.forward where it forwards to the leader. A forwarded apply carries
// the raft.forward span's trace context to a leader that reads it (its
// hello says so), and the leader's raft.commit is that span's child, a
// span of the leader's own tracer (SetTracer): the one span the store
// starts without a parent span of its own process. A context without a
// recording span costs a context lookup, and nothing is allocated or
// sent for it.

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

// SetTracer gives the store the tracer of its spans of applies forwarded
// to it with a trace context (nil: none are made). The node sets it once
// its tracing starts, after Open; until then those applies are untraced.
func (s *Store) SetTracer(t trace.Tracer) {
	if t == nil {
		s.tracer.Store(nil)
		return
	}
	s.tracer.Store(&t)
}

// forwardedSpan starts this node's raft.commit span of an apply forwarded
// with trace context tc, a child of the follower's span; nil when this
// node has no tracer. The follower sent tc only for a sampled trace, and
// the provider's sampler (parent-based) keeps it.
func (s *Store) forwardedSpan(tc transport.TraceContext) trace.Span {
	t := s.tracer.Load()
	if t == nil {
		return nil
	}
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tc.TraceID, SpanID: tc.SpanID,
		TraceFlags: trace.TraceFlags(tc.Flags) & trace.FlagsSampled, Remote: true})
	_, span := (*t).Start(trace.ContextWithRemoteSpanContext(context.Background(), parent), "raft.commit",
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attribute.Bool("idemgate.forwarded", true)))
	return span
}

// wireTraceContext is the trace context a forwarded apply carries: the
// span ctx carries, when its trace is sampled; zero (nothing sent)
// otherwise.
func wireTraceContext(ctx context.Context) transport.TraceContext {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsSampled() {
		return transport.TraceContext{}
	}
	return transport.TraceContext{TraceID: sc.TraceID(), SpanID: sc.SpanID(), Flags: byte(sc.TraceFlags())}
}

// forwardSpan starts the span of one attempt forwarded to leader.
func forwardSpan(ctx context.Context, leader string) (context.Context, trace.Span) {
	ctx, span := startSpan(ctx, "raft.forward", trace.SpanKindClient)
	if span != nil {
		span.SetAttributes(attribute.String("idemgate.leader", leader))
	}
	return ctx, span
}
