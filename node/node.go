package node

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/idemgate/idemgate/api"
	"github.com/idemgate/idemgate/auth"
	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/gateway"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/locks"
	"github.com/idemgate/idemgate/once"
	"github.com/idemgate/idemgate/raftstore"
	"github.com/idemgate/idemgate/resp"
	"github.com/idemgate/idemgate/tokens"
	"github.com/idemgate/idemgate/tracing"
	"github.com/idemgate/idemgate/ttl"
	"github.com/idemgate/idemgate/version"
)

// Node is one running idemgate node: the store, the gateway and API
// listeners, and the metrics registry. `idemgate serve` runs one; the demo
// and the bench run several in one process (internal/democluster).
type Node struct {
	ID    string
	Store *raftstore.Store
	API   *api.API
	// GW is nil on a store-only node (a file without upstream): it serves
	// the API and no client traffic.
	GW *gateway.Gateway
	// Resp is the Redis-protocol listener; nil without nodes[].resp.
	Resp *resp.Server
	Reg  *prometheus.Registry
	// Tracing exports the node's spans; nil when tracing is off.
	Tracing *tracing.Provider
	// Errs receives a listener's error if one stops serving.
	Errs   chan error
	logger *slog.Logger
}

// Start opens the store and starts the listeners of the node s names: the
// API, and the gateway when the file has an upstream. Every line of the
// node, Raft's included, goes to logger.
func Start(s Settings, logger *slog.Logger) (_ *Node, err error) {
	file, cn := s.File, s.Node
	if err := checkGateway(file, cn, logger); err != nil {
		return nil, err
	}
	rc, err := StoreConfig(s)
	if err != nil {
		return nil, err
	}
	gw := gatewayConfig(file, cn, rc.ApplyTimeout, logger)
	if file.Gateway() {
		if gw.JWT, err = JWTVerifier(file, logger); err != nil {
			return nil, err
		}
		gw.RequireJWT = file.JWT != nil && file.JWT.Require == "all"
		startJWT(gw.JWT, file, logger)
	}
	rc.MaxCommandBytes = commandLimit(file, gw)
	rc.Logger = logger
	store, err := raftstore.Open(rc)
	if err != nil {
		return nil, err
	}
	n := &Node{ID: cn.ID, Store: store, Errs: make(chan error, 2), logger: logger}
	defer func() {
		if err != nil {
			store.Close()
		}
	}()
	n.Reg = prometheus.NewRegistry()
	n.Reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo())
	if err := store.Register(n.Reg); err != nil {
		return nil, err
	}
	if n.Tracing, err = startTracing(file, cn.ID, logger, n.Reg); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			n.stopTracing(time.Second)
		}
	}()
	gw.Tracer = n.Tracing.Tracer(tracerGateway)
	store.SetTracer(n.Tracing.Tracer(tracerStore)) // the spans of applies forwarded to it
	tok := tokens.New(store, file.Tokens.TTL.D())
	var scopes []string
	reconcile := map[string][]string{}
	for _, r := range file.Routes {
		scopes = append(scopes, r.Scope)
		if r.ReconcileID != "" {
			reconcile[r.Scope] = append(reconcile[r.Scope], r.ReconcileID)
		}
	}
	tok.SetNamedScopes(scopes)
	if err := tok.Register(n.Reg); err != nil {
		return nil, err
	}
	onceSvc := once.New(store, file.Once.RetentionOf)
	if err := onceSvc.Register(n.Reg); err != nil {
		return nil, err
	}
	lockSvc, err := locks.New(store, locks.DefaultConfig())
	if err != nil {
		return nil, err
	}
	if err := lockSvc.Register(n.Reg); err != nil {
		return nil, err
	}
	nodeAPIs := map[string]string{}
	// The names clients call the API by: every node's, as the operator
	// verbs dial them, and the file's api.hosts.
	hosts := append([]string{cn.API, cn.AdvertiseAPI}, file.API.Hosts...)
	for _, x := range file.Nodes {
		nodeAPIs[x.ID] = x.APIAddr()
		hosts = append(hosts, x.API, x.AdvertiseAPI)
	}
	n.API = api.New(api.Config{Addr: cn.API, NodeAPIs: nodeAPIs, OpTimeout: rc.ApplyTimeout,
		Limits: listenerLimits(file.Limits), Access: s.Access, Hosts: hosts, Logger: logger, Version: version.String(),
		ReconcileIDs: reconcile, Tracer: n.Tracing.Tracer(tracerAPI)}, store, tok, onceSvc, lockSvc, n.Reg)
	if s.PeerTLS != nil {
		n.API.UseTLS(s.PeerTLS.Server())
	}
	if err := n.API.Listen(); err != nil {
		return nil, err
	}
	if file.Gateway() {
		if err := n.startGateway(s, gw, store, tok); err != nil {
			return nil, err
		}
	}
	if cn.Resp != "" {
		if err := n.startResp(s, store, tok, onceSvc, lockSvc, rc.ApplyTimeout); err != nil {
			return nil, err
		}
	}
	go func() { n.Errs <- n.API.Serve() }()
	if n.GW != nil {
		go func() { n.Errs <- n.GW.Serve() }()
	}
	if n.Resp != nil {
		go func() { n.Errs <- n.Resp.Serve() }()
	}
	return n, nil
}

// checkGateway checks the gateway settings of node cn once flags have been
// applied: a gateway needs a listen address; a store-only node ignores one,
// and says so.
func checkGateway(file *config.File, cn config.Node, logger *slog.Logger) error {
	switch {
	case file.Gateway() && cn.Listen == "":
		field := "listen"
		for i, x := range file.Nodes {
			if x.ID == cn.ID {
				field = fmt.Sprintf("nodes[%d].listen", i)
			}
		}
		return file.Errorf(field, "required when upstream is set: the gateway listener's address (or --listen)")
	case !file.Gateway() && cn.Listen != "":
		logger.Warn("listen is ignored: there is no upstream, so the gateway is off (store only)", "node", cn.ID, "listen", cn.Listen)
	}
	return nil
}

// startGateway builds the gateway listener and binds its address.
func (n *Node) startGateway(s Settings, gw gateway.Config, store *raftstore.Store, tok *tokens.Service) error {
	g, err := gateway.New(gw, store, tok)
	if err != nil {
		return err
	}
	if err := g.Register(n.Reg); err != nil {
		return err
	}
	if s.PeerTLS != nil && s.File.TLS.GatewayTLS() {
		g.UseTLS(s.GatewayTLS.Server())
	}
	if err := g.Listen(); err != nil {
		return err
	}
	n.GW = g
	return nil
}

// startResp builds the Redis-protocol listener and binds its address. The
// listeners' limits of the file apply to it: the largest value is the
// largest request body, as on /v1/kv.
func (n *Node) startResp(s Settings, store *raftstore.Store, tok *tokens.Service, onceSvc *once.Service, lockSvc *locks.Service, opTimeout time.Duration) error {
	lim := listenerLimits(s.File.Limits)
	rc := resp.DefaultConfig()
	rc.Addr, rc.NodeID, rc.OpTimeout, rc.Logger = s.Node.Resp, s.Node.ID, opTimeout, n.logger
	rc.MaxBulk, rc.MaxConnsPerIP = lim.MaxRequestBody, lim.MaxConnsPerIP
	rc.MaxRequest, rc.MaxClientBuffer = 2*lim.MaxRequestBody, 16*lim.MaxRequestBody
	if b := s.File.Limits.MaxClientBuffer; b != 0 {
		rc.MaxClientBuffer = int(b)
	}
	rc.IdleTimeout, rc.ReadTimeout, rc.WriteTimeout = lim.IdleTimeout, lim.ReadTimeout, lim.WriteTimeout
	rc.Auth = RespAuth(s.Access)
	rc.Tracer = n.Tracing.Tracer(tracerResp)
	sc := s.File.Scripts // what it leaves out keeps resp's default
	rc.ScriptCache = cmp.Or(int64(sc.Cache), rc.ScriptCache)
	rc.MaxScriptSize = cmp.Or(int64(sc.MaxSize), rc.MaxScriptSize)
	rc.ScriptRuns = cmp.Or(sc.Concurrency, rc.ScriptRuns)
	rc.ScriptQueueWait = cmp.Or(sc.QueueWait.D(), rc.ScriptQueueWait)
	rc.MaxScriptKeys = cmp.Or(sc.MaxKeys, rc.MaxScriptKeys)
	srv, err := resp.New(rc, store, tok, onceSvc, lockSvc, n.Reg)
	if err != nil {
		return err
	}
	if err := srv.Listen(); err != nil {
		return err
	}
	n.Resp = srv
	return nil
}

// RespAuth is the API's authorization as the Redis protocol's AUTH: a
// token's secret (its hash), and reads only for the read role (nil
// without tokens: no AUTH needed).
func RespAuth(ac *auth.Access) resp.AuthFunc {
	if ac == nil {
		return nil
	}
	return func(sum [sha256.Size]byte) (resp.Grant, error) {
		name, role, err := ac.Authenticate(sum)
		if err != nil {
			return resp.Grant{}, err
		}
		return resp.Grant{Name: name, Write: role >= auth.RoleApp, Admin: role >= auth.RoleAdmin}, nil
	}
}

// GatewayLine says what the gateway listener serves, for the start-up line:
// "gateway http://127.0.0.1:8080 -> http://127.0.0.1:3000", or that it is
// off.
func (n *Node) GatewayLine(upstream string) string {
	if n.GW == nil {
		return "gateway off (no upstream: store only)"
	}
	return fmt.Sprintf("gateway %s://%s -> %s", n.GW.Scheme(), n.GW.Addr(), upstream)
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

// sweeperConfig is the expiry sweeper's config: ttl's defaults, and what
// the file sets. The file's own ranges were checked when it was read; what
// depends on a default or on other sections is checked here, naming the
// field.
func sweeperConfig(file *config.File) (ttl.SweeperConfig, error) {
	e := file.Expiry
	sc := ttl.DefaultSweeperConfig()
	setDuration(&sc.Interval, e.Interval)
	setInt(&sc.BatchSize, e.BatchSize)
	setInt(&sc.MaxBatches, e.MaxBatches)
	setDuration(&sc.Pause, e.BacklogPause)
	if sc.Pause > sc.Interval {
		return sc, file.Errorf("expiry.backlog_pause", "%s is longer than expiry.interval (%s)", sc.Pause, sc.Interval)
	}
	if err := sc.Validate(); err != nil {
		return sc, file.Errorf("expiry", "%v", err)
	}
	return sc, nil
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
	if file.TrustedPrefixes != nil {
		g.TrustedProxies = file.TrustedPrefixes
	}
	g.IgnoreUntrustedTenant = file.UntrustedTenant == "ignore"
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

// Kill stops the node at once, as a crash would: listeners close without
// draining, and requests in flight fail; then Raft and bbolt close.
func (n *Node) Kill() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if n.GW != nil {
		n.GW.Halt() // its requests in flight must not reach the upstream later
		n.GW.Shutdown(ctx)
	}
	if n.Resp != nil {
		n.Resp.Close()
	}
	n.API.Shutdown(ctx)
	n.Store.Close()
	n.stopTracing(time.Millisecond)
}

// listenerLimits are every listener's limits: the defaults, and what the
// file sets.
func listenerLimits(l config.Limits) httpx.Limits {
	out := httpx.DefaultLimits()
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

// Stop shuts the node down cleanly: stop accepting, drain requests in
// flight (up to drain), then close Raft and bbolt.
func (n *Node) Stop(drain time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if n.GW != nil {
		if err := n.GW.Shutdown(ctx); err != nil {
			n.logger.Warn("gateway shutdown", "node", n.ID, "error", err)
		}
	}
	if n.Resp != nil {
		n.Resp.Close() // Redis clients reconnect to another node
	}
	if err := n.API.Shutdown(ctx); err != nil {
		n.logger.Warn("api shutdown", "node", n.ID, "error", err)
	}
	// A leader that stops hands leadership on first: the others need no
	// election timeout to go on (a rolling restart costs no write).
	if err := n.Store.HandOff(ctx); err != nil {
		n.logger.Warn("leadership not handed on before stopping", "node", n.ID, "error", err)
	}
	if err := n.Store.Close(); err != nil {
		n.logger.Warn("close store", "node", n.ID, "error", err)
	}
	n.stopTracing(5 * time.Second)
}
