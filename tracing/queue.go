package tracing

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// queue is the provider's span processor: the sampled spans that end wait
// in a bounded channel, and one goroutine exports them in batches. OnEnd,
// called on the request's goroutine by span.End, never blocks: a span
// that finds the channel full is dropped and counted. The SDK's own batch
// processor drops the same way but keeps its count to itself; the count
// is what tells an operator the collector is not keeping up.
type queue struct {
	exp    sdktrace.SpanExporter
	cfg    Config
	logger *slog.Logger
	spans  chan sdktrace.ReadOnlySpan
	flush  chan chan struct{}
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	// Spans exported, dropped at a full queue, and lost with an export
	// that failed.
	exported, dropped, failed atomic.Uint64
	failing                   bool // the last export failed (the run goroutine's)
}

func newQueue(exp sdktrace.SpanExporter, cfg Config, logger *slog.Logger) *queue {
	q := &queue{exp: exp, cfg: cfg, logger: logger, spans: make(chan sdktrace.ReadOnlySpan, cfg.QueueSize),
		flush: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go q.run()
	return q
}

// OnStart does nothing: a span is exported once it ends.
func (q *queue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span for export, or drops it when the queue is full.
func (q *queue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	select {
	case q.spans <- s:
	default:
		q.dropped.Add(1)
	}
}

// run exports batches: when one is full, when its oldest span has waited
// BatchTimeout, when asked to flush, and what is left when stopped.
func (q *queue) run() {
	defer close(q.done)
	timer := time.NewTimer(q.cfg.BatchTimeout)
	defer timer.Stop()
	var batch []sdktrace.ReadOnlySpan
	send := func() {
		if len(batch) > 0 {
			q.export(batch)
			batch = nil
		}
	}
	// drain exports every span queued now, in batches.
	drain := func() {
		for {
			select {
			case s := <-q.spans:
				if batch = append(batch, s); len(batch) >= q.cfg.BatchSize {
					send()
				}
			default:
				send()
				return
			}
		}
	}
	for {
		select {
		case s := <-q.spans:
			if len(batch) == 0 {
				timer.Reset(q.cfg.BatchTimeout)
			}
			if batch = append(batch, s); len(batch) >= q.cfg.BatchSize {
				send()
			}
		case <-timer.C:
			send()
		case reply := <-q.flush:
			drain()
			close(reply)
		case <-q.stop:
			drain()
			return
		}
	}
}

// export sends one batch within ExportTimeout. Its spans are counted as
// exported or failed; a failure is logged once, when exports start to
// fail, and the recovery once.
func (q *queue) export(batch []sdktrace.ReadOnlySpan) {
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.ExportTimeout)
	err := q.exp.ExportSpans(ctx, batch)
	cancel()
	switch {
	case err != nil:
		q.failed.Add(uint64(len(batch)))
		if !q.failing {
			q.logger.Warn("trace export failed; spans are lost until the collector answers", "endpoint", q.cfg.Endpoint, "spans", len(batch), "error", err)
		}
		q.failing = true
	default:
		q.exported.Add(uint64(len(batch)))
		if q.failing {
			q.logger.Info("trace export works again", "endpoint", q.cfg.Endpoint)
		}
		q.failing = false
	}
}

// ForceFlush exports every span queued before it was called, and returns
// once they were sent (or failed), or when ctx ends.
func (q *queue) ForceFlush(ctx context.Context) error {
	reply := make(chan struct{})
	select {
	case q.flush <- reply:
	case <-q.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-reply:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown exports what is queued and shuts the exporter down, within ctx.
func (q *queue) Shutdown(ctx context.Context) error {
	q.once.Do(func() { close(q.stop) })
	select {
	case <-q.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return q.exp.Shutdown(ctx)
}
