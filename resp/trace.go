package resp

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Tracing (Config.Tracer; package tracing exports the spans): the writes a
// connection runs together (one command, or the writes of a pipeline that
// go to the store as one ordered batch) get one server span, named by the
// first command, with the commands' names and count; the store's spans
// are its children. The protocol carries no trace context, so each such
// span starts a trace of its own, sampled at the configured ratio. A
// script run is such a step ("resp eval", "resp evalsha", and their _RO
// forms), with the store's spans of its effects under it; a transaction
// that writes gets a span the same way ("resp exec", its count the
// transaction's commands). Reads are not traced. With a nil Tracer
// nothing here runs and nothing is allocated.

// traceWrites starts the span of the writes cmds under ctx; nil when
// tracing is off.
func (s *Server) traceWrites(ctx context.Context, cmds []*redisCommand) (context.Context, trace.Span) {
	if s.cfg.Tracer == nil || len(cmds) == 0 {
		return ctx, nil
	}
	ctx, span := s.cfg.Tracer.Start(ctx, "resp "+cmds[0].name, trace.WithSpanKind(trace.SpanKindServer))
	if span.IsRecording() {
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = c.name
		}
		span.SetAttributes(attribute.StringSlice("idemgate.resp.commands", names), attribute.Int("idemgate.resp.count", len(cmds)))
	}
	return ctx, span
}

// endTrace ends a span traceWrites started (nil: none).
func endTrace(span trace.Span) {
	if span != nil {
		span.End()
	}
}

// traceRun starts the span of a transaction or a script run, named name
// ("" leaves the enclosing span, a pipeline's, to stand for it); nil when
// tracing is off.
func (s *Server) traceRun(ctx context.Context, name string, n int) (context.Context, trace.Span) {
	if s.cfg.Tracer == nil || name == "" {
		return ctx, nil
	}
	ctx, span := s.cfg.Tracer.Start(ctx, "resp "+name, trace.WithSpanKind(trace.SpanKindServer))
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("idemgate.resp.count", n))
	}
	return ctx, span
}

// spanOnly is a context carrying parent's span and nothing else of it (not
// its deadline): Background when tracing is off or parent has none.
func (s *Server) spanOnly(parent context.Context) context.Context {
	if s.cfg.Tracer == nil {
		return context.Background()
	}
	if sc := trace.SpanContextFromContext(parent); !sc.IsValid() {
		return context.Background()
	}
	return trace.ContextWithSpan(context.Background(), trace.SpanFromContext(parent))
}
