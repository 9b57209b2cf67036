package tracing

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"
)

// Config configures a node's tracing.
type Config struct {
	// Endpoint is the collector's OTLP/HTTP traces URL
	// (http://127.0.0.1:4318/v1/traces); a URL without a path gets
	// /v1/traces. "": tracing off.
	Endpoint string
	// SampleRatio is the share of the traces that start at this node
	// (requests without a traceparent) that are recorded and exported,
	// 0 to 1. A request that comes with a traceparent follows its
	// sampled flag (parent-based), as every other hop of its trace does.
	SampleRatio float64
	// QueueSize bounds the finished spans waiting for export; a span that
	// finds the queue full is dropped and counted
	// (idemgate_trace_spans_dropped_total).
	QueueSize int
	// BatchSize is the most spans one export carries; BatchTimeout the
	// longest a span waits for its batch to fill.
	BatchSize    int
	BatchTimeout time.Duration
	// ExportTimeout bounds one export, its retries included: a collector
	// that does not answer within it costs that batch, and the spans that
	// queue meanwhile past QueueSize.
	ExportTimeout time.Duration
	// Node is the node's id (the resource's service.instance.id), Version
	// the build's (service.version).
	Node, Version string
	Logger        *slog.Logger
}

// DefaultConfig returns tracing off, with the OpenTelemetry SDK's batching
// defaults for when an endpoint is set: every trace that starts here
// sampled, 2048 spans queued, batches of 512 spans or 5 s, 10 s an export.
func DefaultConfig() Config {
	return Config{SampleRatio: 1, QueueSize: 2048, BatchSize: 512, BatchTimeout: 5 * time.Second, ExportTimeout: 10 * time.Second}
}

// Limits of the settings: a queue or batch beyond them holds more memory
// than any collector takes at once.
const (
	maxQueueSize = 1 << 20
	maxBatchSize = 1 << 16
	maxWait      = 10 * time.Minute
)

// errConfig marks an invalid setting.
var errConfig = errors.New("tracing")

// Validate checks the settings of an enabled tracer (Endpoint set); each
// error names the field.
func (c Config) Validate() error {
	if c.Endpoint == "" {
		return nil
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%w: Endpoint %q: want an http:// or https:// URL without credentials, query or fragment", errConfig, c.Endpoint)
	}
	switch {
	case !(c.SampleRatio >= 0 && c.SampleRatio <= 1): // NaN fails both
		return fmt.Errorf("%w: SampleRatio %v: want 0 to 1", errConfig, c.SampleRatio)
	case c.QueueSize < 1 || c.QueueSize > maxQueueSize:
		return fmt.Errorf("%w: QueueSize %d: want 1 to %d", errConfig, c.QueueSize, maxQueueSize)
	case c.BatchSize < 1 || c.BatchSize > maxBatchSize:
		return fmt.Errorf("%w: BatchSize %d: want 1 to %d", errConfig, c.BatchSize, maxBatchSize)
	case c.BatchSize > c.QueueSize:
		return fmt.Errorf("%w: BatchSize %d is over QueueSize %d", errConfig, c.BatchSize, c.QueueSize)
	case c.BatchTimeout <= 0 || c.BatchTimeout > maxWait:
		return fmt.Errorf("%w: BatchTimeout %s: want over 0, up to %s", errConfig, c.BatchTimeout, maxWait)
	case c.ExportTimeout <= 0 || c.ExportTimeout > maxWait:
		return fmt.Errorf("%w: ExportTimeout %s: want over 0, up to %s", errConfig, c.ExportTimeout, maxWait)
	}
	return nil
}

// tracesURL is the endpoint with /v1/traces when it names no path.
func (c Config) tracesURL() string {
	u, _ := url.Parse(c.Endpoint) // Validate parsed it
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String()
}
