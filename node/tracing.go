package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/tracing"
	"github.com/idemgate/idemgate/version"
)

// The instrumentation scopes of the faces' tracers.
const (
	tracerGateway = "github.com/idemgate/idemgate/gateway"
	tracerAPI     = "github.com/idemgate/idemgate/api"
	tracerResp    = "github.com/idemgate/idemgate/resp"
	tracerStore   = "github.com/idemgate/idemgate/raftstore"
)

// tracingConfig is the node's tracing config: tracing's defaults, and what
// the file's tracing: section sets.
func tracingConfig(file *config.File, id string, logger *slog.Logger) tracing.Config {
	t := file.Tracing
	c := tracing.DefaultConfig()
	c.Endpoint, c.Node, c.Version, c.Logger = t.Endpoint, id, version.String(), logger
	if t.SampleRatio != nil {
		c.SampleRatio = *t.SampleRatio
	}
	setInt(&c.QueueSize, t.QueueSize)
	setInt(&c.BatchSize, t.BatchSize)
	setDuration(&c.BatchTimeout, t.BatchTimeout)
	setDuration(&c.ExportTimeout, t.ExportTimeout)
	return c
}

// startTracing starts the node's span export, registers its counters, and
// says where spans go; nil when the file configures none.
func startTracing(file *config.File, id string, logger *slog.Logger, reg prometheus.Registerer) (*tracing.Provider, error) {
	tc := tracingConfig(file, id, logger)
	p, err := tracing.New(tc)
	if err != nil {
		return nil, file.Errorf("tracing", "%v", err)
	}
	if p == nil {
		return nil, nil
	}
	if err := p.Register(reg); err != nil {
		p.Shutdown(context.Background())
		return nil, err
	}
	logger.Info("tracing on", "node", id, "endpoint", tc.Endpoint, "sample_ratio", tc.SampleRatio)
	return p, nil
}

// stopTracing exports the spans still queued, waiting at most wait.
func (n *Node) stopTracing(wait time.Duration) {
	if n.Tracing == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := n.Tracing.Shutdown(ctx); err != nil {
		n.logger.Warn("tracing: spans still queued were not exported", "node", n.ID, "error", err)
	}
	// The last word on what the collector got, for a node whose metrics
	// are no longer scraped.
	st := n.Tracing.Stats()
	n.logger.Info("tracing off", "node", n.ID, "spans_exported", st.Exported, "spans_dropped", st.Dropped, "spans_failed", st.Failed)
}
