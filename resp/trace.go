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
// span starts a trace of its own, sampled at the configured ratio. Reads,
// MULTI/EXEC and scripts are not traced. With a nil Tracer nothing here
// runs and nothing is allocated.

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
