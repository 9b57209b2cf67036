package tracing

import (
	"context"
	"strings"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/propagation"
)

// W3C trace context on fasthttp requests. The propagator is
// OpenTelemetry's: a traceparent that does not parse (a wrong length,
// upper-case hex, version ff, an all-zero trace or parent id, flags or
// fields version 00 does not allow) is ignored whole, and a tracestate
// that does not parse (more than 32 members, a malformed one) is dropped
// while its traceparent is kept. The carrier adds what the W3C
// recommendation asks of the receiver beside that: a traceparent sent
// more than once is ignored, tracestate headers sent more than once are
// one list, and a list over 512 characters is cut as it says.

const (
	headerTraceparent = "traceparent"
	headerTracestate  = "tracestate"
	// maxTraceState is the longest tracestate kept: the W3C
	// recommendation's 512 characters a vendor should propagate; a longer
	// one loses its members over 128 characters first, then members from
	// its end.
	maxTraceState   = 512
	maxStateMember  = 128
	maxStateMembers = 32
)

var propagator = propagation.TraceContext{}

// Extract returns ctx carrying the remote span context of the request's
// traceparent and tracestate, or ctx itself when there is none or it does
// not parse: the request then starts a trace of its own.
func Extract(ctx context.Context, h *fasthttp.RequestHeader) context.Context {
	return propagator.Extract(ctx, requestCarrier{h})
}

// Inject replaces the request's traceparent and tracestate with those of
// the span ctx carries (the caller's own span, now the parent of the next
// hop's); a client's own are never passed on beside them.
func Inject(ctx context.Context, h *fasthttp.RequestHeader) {
	h.Del(headerTraceparent)
	h.Del(headerTracestate)
	propagator.Inject(ctx, requestCarrier{h})
}

// requestCarrier is a fasthttp request header as a propagation.TextMapCarrier.
type requestCarrier struct{ h *fasthttp.RequestHeader }

func (c requestCarrier) Get(key string) string {
	vals := c.h.PeekAll(key)
	switch {
	case len(vals) == 0:
		return ""
	case strings.EqualFold(key, headerTraceparent):
		if len(vals) > 1 {
			return "" // which one is the parent cannot be told
		}
		return string(vals[0])
	case strings.EqualFold(key, headerTracestate):
		var b strings.Builder
		for i, v := range vals {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(v)
		}
		return boundTraceState(b.String())
	}
	return string(vals[0])
}

func (c requestCarrier) Set(key, value string) { c.h.Set(key, value) }

func (c requestCarrier) Keys() []string { return []string{headerTraceparent, headerTracestate} }

// boundTraceState cuts a tracestate list over maxTraceState characters as
// the W3C recommendation says: members over maxStateMember characters go
// first, then members from the end. A list of more than maxStateMembers
// members is left whole, for the parser to refuse (the recommendation
// says to discard it, not to cut it).
func boundTraceState(s string) string {
	if len(s) <= maxTraceState {
		return s
	}
	members := strings.Split(s, ",")
	if len(members) > maxStateMembers {
		return s
	}
	kept := members[:0]
	for _, m := range members {
		if m = strings.TrimSpace(m); m != "" && len(m) <= maxStateMember {
			kept = append(kept, m)
		}
	}
	for len(kept) > 0 && len(strings.Join(kept, ",")) > maxTraceState {
		kept = kept[:len(kept)-1]
	}
	return strings.Join(kept, ",")
}
