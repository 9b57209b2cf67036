package config

import (
	"net/url"
	"time"
)

// Tracing configures the OpenTelemetry spans each node exports (the
// tracing: section). Left out, or without an endpoint, tracing is off. A
// field left out (zero) keeps the default of tracing.DefaultConfig.
type Tracing struct {
	// Endpoint is the collector's OTLP/HTTP traces URL
	// (http://127.0.0.1:4318/v1/traces); "": tracing off.
	Endpoint string `yaml:"endpoint"`
	// SampleRatio is the share of the traces that start at the node that
	// are recorded, 0 to 1 (left out: 1); a request that comes with a
	// traceparent follows its sampled flag.
	SampleRatio *float64 `yaml:"sample_ratio"`
	// QueueSize bounds the spans waiting for export; past it spans are
	// dropped and counted. BatchSize is the most spans one export
	// carries, BatchTimeout the longest a span waits for its batch,
	// ExportTimeout the longest one export may take.
	QueueSize     int      `yaml:"queue_size"`
	BatchSize     int      `yaml:"batch_size"`
	BatchTimeout  Duration `yaml:"batch_timeout"`
	ExportTimeout Duration `yaml:"export_timeout"`
}

const (
	maxTraceQueue = 1 << 20
	maxTraceBatch = 1 << 16
	maxTraceWait  = 10 * time.Minute
)

// validate checks what the file sets; what it leaves out is
// tracing.DefaultConfig's. A batch over the queue is checked here when the
// file sets both, and by package tracing against its default otherwise.
func (t *Tracing) validate() error {
	if t.Endpoint != "" {
		u, err := url.Parse(t.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return fieldErr("tracing.endpoint", "%q: want an http:// or https:// URL (the collector's OTLP/HTTP traces endpoint) without credentials, query or fragment", t.Endpoint)
		}
	}
	if r := t.SampleRatio; r != nil && !(*r >= 0 && *r <= 1) {
		return fieldErr("tracing.sample_ratio", "%v: want 0 to 1", *r)
	}
	if t.QueueSize < 0 || t.QueueSize > maxTraceQueue {
		return fieldErr("tracing.queue_size", "%d: want 1 to %d (0 or left out: the default)", t.QueueSize, maxTraceQueue)
	}
	if t.BatchSize < 0 || t.BatchSize > maxTraceBatch {
		return fieldErr("tracing.batch_size", "%d: want 1 to %d (0 or left out: the default)", t.BatchSize, maxTraceBatch)
	}
	if t.QueueSize != 0 && t.BatchSize > t.QueueSize {
		return fieldErr("tracing.batch_size", "%d is over tracing.queue_size %d", t.BatchSize, t.QueueSize)
	}
	for _, d := range []struct {
		field string
		v     Duration
	}{{"tracing.batch_timeout", t.BatchTimeout}, {"tracing.export_timeout", t.ExportTimeout}} {
		if d.v < 0 || d.v.D() > maxTraceWait {
			return fieldErr(d.field, "%s: want up to %s (0 or left out: the default)", d.v.D(), maxTraceWait)
		}
	}
	return nil
}
