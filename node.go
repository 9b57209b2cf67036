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
	rc.HeartbeatTimeout = file.Raft.HeartbeatTimeout.D()
	rc.ElectionTimeout = file.Raft.ElectionTimeout.D()
	rc.LeaderLeaseTimeout = rc.HeartbeatTimeout / 2
	rc.SnapshotThreshold = file.Raft.SnapshotThreshold
	rc.SnapshotInterval = file.Raft.SnapshotInterval.D()
	rc.ApplyTimeout = file.Raft.ApplyTimeout.D()
	rc.FSMNoSync = !file.Raft.FSMFsync
	rc.MinFreeBytes = uint64(file.Raft.MinFree)
	rc.MaxClockJump = file.Raft.MaxClockJump.D()
	rc.MaxCommandBytes = commandLimit(file)
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
	n.gw, err = gateway.New(gatewayConfig(file, cn, rc.ApplyTimeout, logger), store, tok)
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
func commandLimit(file *config.File) int {
	n := int(file.Limits.MaxRequestBody)
	for _, r := range file.Routes {
		if int(*r.MaxStoredBody) > n {
			n = int(*r.MaxStoredBody)
		}
	}
	return n + max(int(file.Limits.MaxHeaderBytes), int(file.Limits.MaxResponseHeaderBytes)) + 64<<10
}

func gatewayConfig(file *config.File, cn config.Node, opTimeout time.Duration, logger *slog.Logger) gateway.Config {
	lim := file.Limits
	g := gateway.DefaultConfig()
	g.Addr, g.Upstream, g.Routes = cn.Listen, file.Upstream, file.Routes
	g.SuspectWindow, g.OpTimeout = file.Suspects.Window.D(), opTimeout
	g.Limits = listenerLimits(lim)
	g.UpstreamTimeout, g.UpstreamConns = lim.UpstreamTimeout.D(), lim.UpstreamConns
	g.MaxResponseBody, g.MaxResponseHeaderBytes = int(lim.MaxResponseBody), int(lim.MaxResponseHeaderBytes)
	g.Logger = logger
	return g
}

// kill stops the node at once, as a crash would: listeners close without
// draining, and requests in flight fail; then Raft and bbolt close.
func (n *node) kill() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	n.gw.Shutdown(ctx)
	n.api.Shutdown(ctx)
	n.store.Close()
}

// listenerLimits turns the file's limits into the listeners' (both use the
// same ones).
func listenerLimits(l config.Limits) gateway.Limits {
	return gateway.Limits{
		ReadTimeout: l.ReadTimeout.D(), WriteTimeout: l.WriteTimeout.D(), IdleTimeout: l.IdleTimeout.D(),
		MaxRequestBody: int(l.MaxRequestBody), MaxHeaderBytes: int(l.MaxHeaderBytes),
		MaxConnsPerIP: l.MaxConnsPerIP, Concurrency: l.Concurrency, MaxBodyBuffer: int(l.MaxBodyBuffer),
	}
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
