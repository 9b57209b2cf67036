package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Provider is a node's tracer provider and its export queue. A nil
// *Provider is tracing off: its Tracer is nil, Register and Shutdown do
// nothing.
type Provider struct {
	tp *sdktrace.TracerProvider
	q  *queue
}

// New starts tracing as cfg says; with no Endpoint it returns nil (off).
// Nothing is sent before the first span ends, so an unreachable collector
// is no error here: its exports fail, and are counted and logged.
func New(cfg Config) (*Provider, error) {
	if cfg.Endpoint == "" {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// The options given here win over the OTEL_EXPORTER_OTLP_* variables;
	// the ones not given (headers, TLS files, compression) still come
	// from them, as they do for every OpenTelemetry SDK.
	exp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(cfg.tracesURL()),
		otlptracehttp.WithTimeout(cfg.ExportTimeout),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 250 * time.Millisecond,
			MaxInterval: 2 * time.Second, MaxElapsedTime: cfg.ExportTimeout}))
	if err != nil {
		return nil, fmt.Errorf("tracing: exporter for %s: %w", cfg.Endpoint, err)
	}
	q := newQueue(exp, cfg, cfg.Logger)
	res := resource.NewSchemaless(
		attribute.String("service.name", "idemgate"),
		attribute.String("service.instance.id", cfg.Node),
		attribute.String("service.version", cfg.Version))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
		sdktrace.WithSpanProcessor(q))
	return &Provider{tp: tp, q: q}, nil
}

// Tracer is the tracer of one package (its import path); nil when p is nil.
func (p *Provider) Tracer(pkg string) trace.Tracer {
	if p == nil {
		return nil
	}
	return p.tp.Tracer(pkg)
}

// Register registers the export counters:
// idemgate_trace_spans_exported_total, idemgate_trace_spans_dropped_total
// (the queue was full) and idemgate_trace_spans_failed_total (lost with
// an export that failed).
func (p *Provider) Register(reg prometheus.Registerer) error {
	if p == nil {
		return nil
	}
	for _, c := range []struct {
		name, help string
		n          func() uint64
	}{
		{"idemgate_trace_spans_exported_total", "Spans sent to the trace collector.", p.q.exported.Load},
		{"idemgate_trace_spans_dropped_total", "Spans dropped because the export queue was full (the collector is slow or unreachable).", p.q.dropped.Load},
		{"idemgate_trace_spans_failed_total", "Spans lost with an export the collector refused or did not answer in time.", p.q.failed.Load},
	} {
		n := c.n
		if err := reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help},
			func() float64 { return float64(n()) })); err != nil {
			return err
		}
	}
	return nil
}

// Stats are the export counters, as Register exports them.
type Stats struct{ Exported, Dropped, Failed uint64 }

// Stats reads the export counters (zero when p is nil).
func (p *Provider) Stats() Stats {
	if p == nil {
		return Stats{}
	}
	return Stats{Exported: p.q.exported.Load(), Dropped: p.q.dropped.Load(), Failed: p.q.failed.Load()}
}

// ForceFlush exports the spans that ended before it was called, within ctx.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.tp.ForceFlush(ctx)
}

// Shutdown exports what is queued, within ctx, and stops: spans that end
// later are not recorded.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.tp.Shutdown(ctx)
}
