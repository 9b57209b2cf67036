package transport

import (
	"encoding/binary"
	"errors"
)

// Trace context on forwarded applies. A follower that forwards an apply of
// a sampled trace sends the W3C trace context of its raft.forward span
// with it, so that the leader's span of the commit is that span's child in
// the same trace. Only to a leader whose hello says it reads them
// (FeatureTracedApply): an older leader would close the connection on a
// kind it does not know. Two kinds carry them:
//
//	applyTraced      payload: trace | an encoded command
//	applyBatchTraced payload: count (uvarint) | count × (index (uvarint) | trace) | an apply batch (as applyBatch)
//
// where trace is tlen (1) | tlen bytes, and a trace context of this
// version is traceContextLen bytes: trace id (16) | parent span id (8) |
// flags (1). The indexes of a traced batch name its traced applies, in
// increasing order; the others are untraced, so an apply without a trace
// context adds no byte to any frame, and a frame none of whose applies is
// traced is an Apply or an applyBatch, as before.
//
// A trace context is advice: one of another length (a later version's),
// or with an all-zero trace or span id, is skipped and its apply handled
// as untraced. Only a frame whose structure does not parse is an error
// (the connection is closed, as for a malformed batch).

// FeatureTracedApply is what a hello says (Hello.Features) when its node's
// Server reads traced applies (applyTraced, applyBatchTraced).
const FeatureTracedApply = "traced-apply"

// features are what this package's Server reads beyond the first
// forwarding protocol: every hello says them.
var features = []string{FeatureTracedApply, FeatureLeaderScript}

// FeatureLeaderScript is what a hello says when its node's Server takes
// LeaderScript requests.
const FeatureLeaderScript = "leader-script"

// traceContextLen is the length of a trace context of this version.
const traceContextLen = 16 + 8 + 1

// TraceContext is the W3C trace context a follower sends with an apply:
// the trace, its span the leader's is a child of, and the trace flags
// (bit 0: sampled). The zero TraceContext is none.
type TraceContext struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte
}

// IsValid reports whether tc names a trace and a span, as the W3C
// recommendation requires of a parent (both ids not all zero).
func (tc TraceContext) IsValid() bool {
	return tc.TraceID != [16]byte{} && tc.SpanID != [8]byte{}
}

// appendTrace appends tc as a trace field: tlen | bytes.
func appendTrace(b []byte, tc TraceContext) []byte {
	b = append(b, traceContextLen)
	b = append(b, tc.TraceID[:]...)
	b = append(b, tc.SpanID[:]...)
	return append(b, tc.Flags)
}

// errMalformedTrace: a traced frame whose structure does not parse.
var errMalformedTrace = errors.New("transport: malformed traced apply")

// readTrace reads one trace field from the front of p and returns the
// trace context (zero when it is not one this version reads or not
// valid) and the rest of p: an applyTraced payload's command.
func readTrace(p []byte) (TraceContext, []byte, error) {
	if len(p) < 1 || int(p[0]) > len(p)-1 {
		return TraceContext{}, nil, errMalformedTrace
	}
	field, rest := p[1:1+int(p[0])], p[1+int(p[0]):]
	var tc TraceContext
	if len(field) == traceContextLen {
		copy(tc.TraceID[:], field)
		copy(tc.SpanID[:], field[16:])
		tc.Flags = field[24]
	}
	if !tc.IsValid() {
		tc = TraceContext{}
	}
	return tc, rest, nil
}

// encodeTracedApplyBatch is the payload of an applyBatchTraced frame of
// calls; at least one of them carries a trace context.
func encodeTracedApplyBatch(calls []*fwdCall) []byte {
	var head []byte
	n := 0
	for i, c := range calls {
		if c.kind == applyTraced {
			n++
			head = append(binary.AppendUvarint(head, uint64(i)), c.payload[:1+traceContextLen]...)
		}
	}
	out := binary.AppendUvarint(nil, uint64(n))
	out = append(out, head...)
	return append(out, encodeApplyBatch(calls)...)
}

// command is the encoded command a call of an apply sends: its payload,
// past the trace field of a traced one.
func (c *fwdCall) command() []byte {
	if c.kind == applyTraced {
		return c.payload[1+traceContextLen:]
	}
	return c.payload
}

// decodeTracedApplyBatch calls each for every apply of an
// applyBatchTraced frame, in order, with its trace context (zero:
// untraced); a malformed frame is an error before any is called.
func decodeTracedApplyBatch(p []byte, each func(seq uint64, cmd []byte, tc TraceContext)) error {
	n, k := binary.Uvarint(p)
	if k <= 0 || n == 0 || n > maxForwardBatch {
		return errors.New("transport: malformed traced apply batch (count)")
	}
	p = p[k:]
	type traced struct {
		index uint64
		tc    TraceContext
	}
	entries := make([]traced, 0, n)
	for i := uint64(0); i < n; i++ {
		index, k := binary.Uvarint(p)
		if k <= 0 || (i > 0 && index <= entries[i-1].index) {
			return errors.New("transport: malformed traced apply batch (index)")
		}
		tc, rest, err := readTrace(p[k:])
		if err != nil {
			return err
		}
		entries, p = append(entries, traced{index, tc}), rest
	}
	if count, k := binary.Uvarint(p); k <= 0 || entries[len(entries)-1].index >= count {
		return errors.New("transport: malformed traced apply batch (index past the batch)")
	}
	i, next := uint64(0), 0
	return decodeApplyBatch(p, func(seq uint64, cmd []byte) {
		var tc TraceContext
		if next < len(entries) && entries[next].index == i {
			tc = entries[next].tc
			next++
		}
		i++
		each(seq, cmd, tc)
	})
}
