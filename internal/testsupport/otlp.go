package testsupport

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/idemgate/idemgate/tracing"
)

// Collector is an OTLP/HTTP trace receiver on a loopback port: it decodes
// every export as a collector does (the real protobuf of
// go.opentelemetry.io/proto/otlp) and keeps its spans for the test.
type Collector struct {
	Addr string // host:port
	URL  string // the traces endpoint: http://Addr/v1/traces
	// Exports counts the export requests that arrived (held ones too).
	Exports atomic.Int64

	srv   *http.Server
	mu    sync.Mutex
	spans []Span
	hold  chan struct{} // while open, exports wait on it (a slow collector)
}

// Span is one exported span as the test reads it: ids in hex (ParentID ""
// for a root), attribute values as text.
type Span struct {
	Name                      string
	TraceID, SpanID, ParentID string
	Kind                      string // SPAN_KIND_SERVER, ...
	Attrs                     map[string]string
	Node                      string // the resource's service.instance.id
	Error                     bool   // status ERROR
}

// StartCollector serves a Collector until the test ends.
func StartCollector(t TB) *Collector {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &Collector{Addr: ln.Addr().String()}
	c.URL = "http://" + c.Addr + "/v1/traces"
	c.srv = &http.Server{Handler: http.HandlerFunc(c.serve), ReadHeaderTimeout: 5 * time.Second}
	go c.srv.Serve(ln)
	t.Cleanup(func() {
		c.Release()
		c.srv.Close()
	})
	return c
}

// Hold makes the exports that arrive wait, unanswered, until Release (or
// the end of the test): a collector that does not keep up.
func (c *Collector) Hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hold == nil {
		c.hold = make(chan struct{})
	}
}

// Release answers the held exports, and the ones that follow at once.
func (c *Collector) Release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hold != nil {
		close(c.hold)
		c.hold = nil
	}
}

// Spans are the spans received so far, in the order they came.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Trace is the spans received of one trace.
func (c *Collector) Trace(traceID string) []Span {
	var out []Span
	for _, s := range c.Spans() {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}

func (c *Collector) serve(w http.ResponseWriter, r *http.Request) {
	c.Exports.Add(1)
	c.mu.Lock()
	hold := c.hold
	c.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.Error(w, "not an OTLP traces export", http.StatusNotFound)
		return
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, 64<<20)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		http.Error(w, "not an ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		node := attrs(rs.GetResource().GetAttributes())["service.instance.id"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, Span{Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()),
					SpanID: hex.EncodeToString(s.GetSpanId()), ParentID: hex.EncodeToString(s.GetParentSpanId()),
					Kind: s.GetKind().String(), Attrs: attrs(s.GetAttributes()), Node: node,
					Error: s.GetStatus().GetCode().String() == "STATUS_CODE_ERROR"})
			}
		}
	}
	c.mu.Lock()
	c.spans = append(c.spans, got...)
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = anyText(kv.GetValue())
	}
	return m
}

func anyText(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, anyText(e))
		}
		return strings.Join(parts, ",")
	}
	return ""
}

// NewTracing starts tracing to endpoint as node at ratio (tweak, when not
// nil, sets the rest), batches going out every 50 ms; it is shut down when
// the test ends.
func NewTracing(t interface {
	Failer
	Cleanup(func())
}, endpoint, node string, ratio float64, tweak func(*tracing.Config)) *tracing.Provider {
	t.Helper()
	cfg := tracing.DefaultConfig()
	cfg.Endpoint, cfg.Node, cfg.SampleRatio, cfg.BatchTimeout = endpoint, node, ratio, 50*time.Millisecond
	if tweak != nil {
		tweak(&cfg)
	}
	p, err := tracing.New(cfg)
	if err != nil {
		t.Fatalf("tracing: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		p.Shutdown(ctx)
	})
	return p
}

// FlushTraces exports the spans ended so far of every provider.
func FlushTraces(t Failer, provs ...*tracing.Provider) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, p := range provs {
		if err := p.ForceFlush(ctx); err != nil {
			t.Fatalf("flush traces: %v", err)
		}
	}
}
