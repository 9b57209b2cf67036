// Package tracing exports OpenTelemetry spans of a node's requests over
// OTLP/HTTP, and reads and writes W3C trace context (traceparent,
// tracestate) on fasthttp requests.
//
// It owns the node's one TracerProvider: the sampler (parent-based, a
// ratio for traces that start here), the resource (service.name idemgate,
// the node id), and the span queue (queue.go) that batches finished spans
// to the exporter. The queue is bounded and never waits: a span that finds
// it full is dropped and counted, so a slow or unreachable collector costs
// spans, never a request's time or its answer.
//
// Tracing is off unless an endpoint is configured: New then returns a nil
// *Provider, whose Tracer is nil, and the faces skip every tracing step on
// a nil Tracer, so that a request allocates nothing for it. The faces
// start their own spans (gateway, api, resp); the store's spans are
// children of whatever span a call's context carries (raftstore), and it
// makes none for a context that carries no recording span.
//
// It never decides anything about a request: a trace context that does
// not parse is ignored, as the W3C recommendation says, and the request
// goes on as one without it.
package tracing
