package main

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/gateway"
	"github.com/idemgate/idemgate/raftstore"
	"github.com/idemgate/idemgate/tokens"
)

// node is one running idemgate node: the store, the gateway and API
// listeners, and the metrics registry. `serve` runs one; `demo` and `bench`
// run several in one process.
type node struct {
	id     string
	store  *raftstore.Store
	api    *gateway.API
	gw     *gateway.Gateway
	reg    *prometheus.Registry
	errs   chan error
	logger *slog.Logger
}

// startNode opens the store and starts both listeners of the node s names.
func startNode(s nodeSettings, logger *slog.Logger, raftLog io.Writer) (_ *node, err error) {
	file, cn := s.file, s.node
	rc := raftstore.DefaultConfig()
	rc.NodeID, rc.RaftBind, rc.DataDir = cn.ID, cn.Raft, s.dataDir
	for _, n := range file.Nodes {
		rc.Peers = append(rc.Peers, raftstore.Peer{ID: n.ID, RaftAddr: n.Raft})
	}
	// raftstore's defaults, and what the file sets (each default is
	// defined once, by the package that owns it).
	r := file.Raft
	setDuration(&rc.HeartbeatTimeout, r.HeartbeatTimeout)
	setDuration(&rc.ElectionTimeout, r.ElectionTimeout)
	rc.LeaderLeaseTimeout = rc.HeartbeatTimeout / 2
	if r.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = r.SnapshotThreshold
	}
	setDuration(&rc.SnapshotInterval, r.SnapshotInterval)
	setDuration(&rc.ApplyTimeout, r.ApplyTimeout)
	setDuration(&rc.MaxClockJump, r.MaxClockJump)
	if r.MinFree > 0 {
		rc.MinFreeBytes = uint64(r.MinFree)
	}
	rc.FSMNoSync = !r.FSMFsync
	gw := gatewayConfig(file, cn, rc.ApplyTimeout, logger)
	rc.MaxCommandBytes = commandLimit(file, gw)
	rc.Logger = logger
	rc.RaftLogOutput = raftLog
	rc.PeerTLS = s.peerTLS
	store, err := raftstore.Open(rc)
	if err != nil {
		return nil, err
	}
	n := &node{id: cn.ID, store: store, errs: make(chan error, 2), logger: logger}
	defer func() {
		if err != nil {
			store.Close()
		}
	}()
	n.reg = prometheus.NewRegistry()
	n.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := store.Register(n.reg); err != nil {
		return nil, err
	}
	tok := tokens.New(store, file.Tokens.TTL.D())
	if err := tok.Register(n.reg); err != nil {
		return nil, err
	}
	nodeAPIs := map[string]string{}
	for _, x := range file.Nodes {
		nodeAPIs[x.ID] = x.API
	}
	n.api = gateway.NewAPI(gateway.APIConfig{Addr: cn.API, NodeAPIs: nodeAPIs, OpTimeout: rc.ApplyTimeout,
		Limits: listenerLimits(file.Limits), Access: s.access, Logger: logger}, store, tok, n.reg)
	n.gw, err = gateway.New(gw, store, tok)
	if err != nil {
		return nil, err
	}
	if err := n.gw.Register(n.reg); err != nil {
		return nil, err
	}
	if s.peerTLS != nil {
		n.api.UseTLS(s.peerTLS.Server())
		if file.TLS.GatewayTLS() {
			n.gw.UseTLS(s.gatewayTLS.Server())
		}
	}
	if err := n.api.Listen(); err != nil {
		return nil, err
	}
	if err := n.gw.Listen(); err != nil {
		return nil, err
	}
	go func() { n.errs <- n.api.Serve() }()
	go func() { n.errs <- n.gw.Serve() }()
	return n, nil
}

// commandLimit is the largest command this node's listeners can make (a KV
// value or request body, or a stored response with its headers, which are
// up to max_response_header_bytes): the store refuses larger ones and
// bounds forwarding frames with it.
func commandLimit(file *config.File, g gateway.Config) int {
	n := g.MaxRequestBody
	for _, r := range file.Routes {
		if int(*r.MaxStoredBody) > n {
			n = int(*r.MaxStoredBody)
		}
	}
	return n + max(g.MaxHeaderBytes, g.MaxResponseHeaderBytes) + 64<<10
}

// gatewayConfig is the gateway listener's config: gateway's defaults, and
// what the file sets.
func gatewayConfig(file *config.File, cn config.Node, opTimeout time.Duration, logger *slog.Logger) gateway.Config {
	lim := file.Limits
	g := gateway.DefaultConfig()
	g.Addr, g.Upstream, g.Routes = cn.Listen, file.Upstream, file.Routes
	g.SuspectWindow, g.OpTimeout = file.Suspects.Window.D(), opTimeout
	g.Limits = listenerLimits(lim)
	setDuration(&g.UpstreamTimeout, lim.UpstreamTimeout)
	setInt(&g.UpstreamConns, lim.UpstreamConns)
	setInt(&g.MaxResponseBody, int(lim.MaxResponseBody))
	setInt(&g.MaxResponseHeaderBytes, int(lim.MaxResponseHeaderBytes))
	g.Logger = logger
	return g
}

// setDuration and setInt overlay a value the file sets (non-zero) on a
// package's default.
func setDuration(dst *time.Duration, v config.Duration) {
	if v > 0 {
		*dst = v.D()
	}
}

func setInt(dst *int, v int) {
	if v > 0 {
		*dst = v
	}
}

// kill stops the node at once, as a crash would: listeners close without
// draining, and requests in flight fail; then Raft and bbolt close.
func (n *node) kill() {
	n.gw.Halt() // its requests in flight must not reach the upstream later
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	n.gw.Shutdown(ctx)
	n.api.Shutdown(ctx)
	n.store.Close()
}

// listenerLimits are both listeners' limits: gateway's defaults, and what
// the file sets.
func listenerLimits(l config.Limits) gateway.Limits {
	out := gateway.DefaultConfig().Limits
	setDuration(&out.ReadTimeout, l.ReadTimeout)
	setDuration(&out.WriteTimeout, l.WriteTimeout)
	setDuration(&out.IdleTimeout, l.IdleTimeout)
	setInt(&out.MaxRequestBody, int(l.MaxRequestBody))
	setInt(&out.MaxHeaderBytes, int(l.MaxHeaderBytes))
	setInt(&out.MaxConnsPerIP, l.MaxConnsPerIP)
	setInt(&out.Concurrency, l.Concurrency)
	setInt(&out.MaxBodyBuffer, int(l.MaxBodyBuffer))
	return out
}

// stop shuts the node down cleanly: stop accepting, drain requests in
// flight (up to drain), then close Raft and bbolt.
func (n *node) stop(drain time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := n.gw.Shutdown(ctx); err != nil {
		n.logger.Warn("gateway shutdown", "node", n.id, "error", err)
	}
	if err := n.api.Shutdown(ctx); err != nil {
		n.logger.Warn("api shutdown", "node", n.id, "error", err)
	}
	if err := n.store.Close(); err != nil {
		n.logger.Warn("close store", "node", n.id, "error", err)
	}
}
