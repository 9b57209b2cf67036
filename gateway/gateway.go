package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/jwtauth"
	"github.com/idemgate/idemgate/storeapi"
)

// Config configures the gateway listener.
type Config struct {
	Addr     string
	Upstream string // http://host:port
	Routes   []config.Route
	// SuspectWindow: two first requests with one body digest and different
	// keys within it are suspected duplicates. 0: detection off.
	SuspectWindow time.Duration
	// OpTimeout bounds one store call (begin, complete, token consume).
	OpTimeout time.Duration
	httpx.Limits
	UpstreamTimeout time.Duration
	UpstreamConns   int
	MaxResponseBody int
	// MaxResponseHeaderBytes sizes the buffer an upstream answer's header
	// block is read into (fasthttp's default is 4 KiB).
	MaxResponseHeaderBytes int
	// CacheBytes bounds the in-memory cache of completed records.
	CacheBytes int
	// TokenRate and TokenBurst bound the form tokens one client address
	// may have issued by POST /_idem/tokens (per second, and at once).
	TokenRate, TokenBurst float64
	// TrustedProxies are the client addresses whose requests may carry a
	// route's tenant header (tenant.go); IgnoreUntrustedTenant drops the
	// header from any other address instead of refusing the request.
	TrustedProxies        []netip.Prefix
	IgnoreUntrustedTenant bool
	// JWT verifies the bearer JWTs of the routes that require one (jwt.go);
	// RequireJWT requires one on every request the gateway forwards.
	JWT        *jwtauth.Verifier
	RequireJWT bool
	Logger     *slog.Logger
	// Tracer makes the spans of the requests (trace.go); nil: tracing off.
	Tracer trace.Tracer
}

// DefaultConfig returns safe limits; callers set Addr, Upstream and Routes.
func DefaultConfig() Config {
	return Config{
		SuspectWindow: config.DefaultSuspectWindow, OpTimeout: 5 * time.Second,
		Limits:          httpx.DefaultLimits(),
		UpstreamTimeout: 30 * time.Second, UpstreamConns: 512, MaxResponseBody: 32 << 20,
		MaxResponseHeaderBytes: config.DefaultMaxResponseHeaderBytes, CacheBytes: 64 << 20,
		TokenRate: 10, TokenBurst: 50,
		// A proxy on the node's own host (a sidecar, nginx on the same
		// machine) sets the tenant header; anyone on that host can reach
		// the node's files and loopback ports anyway.
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
	}
}

// Gateway is the client listener of one node.
type Gateway struct {
	httpx.Listener
	cfg      Config
	store    Store
	tokens   Tokens
	routes   []*route
	upstream *fasthttp.HostClient
	cache    *replayCache
	metrics  *metrics
	pass     *routeMetrics // unmatched requests
	logger   *slog.Logger
	// tokenScopes are the scopes of the routes that take form tokens: the
	// only ones POST /_idem/tokens issues in.
	tokenScopes map[string]bool
	tokenLimit  *ipLimiter
	bodies      *httpx.BodyBudget
	halted      atomic.Bool // Halt: nothing more goes to the upstream
}

// errHalted: the gateway was halted; nothing was sent.
var errHalted = errors.New("gateway halted: nothing was sent to the upstream")

// Halt stops the gateway from sending anything more to the upstream, as a
// crash would: a request between its record's begin and the upstream call
// goes no further. For stopping a node inside a process (the demo's killed
// leader, fault tests): its handler goroutines outlive a listener's
// Shutdown, and one that called the upstream after the "crash", when its
// record may have turned outcome-unknown and the client retried elsewhere,
// would carry the request out twice.
func (g *Gateway) Halt() { g.halted.Store(true) }

// New builds the gateway listener.
func New(cfg Config, store Store, tok Tokens) (*Gateway, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	routes, err := compileRoutes(cfg.Routes)
	if err != nil {
		return nil, err
	}
	if err := requireJWT(cfg, routes); err != nil {
		return nil, err
	}
	up, err := newUpstream(cfg)
	if err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, store: store, tokens: tok, routes: routes, upstream: up,
		cache: newReplayCache(cfg.CacheBytes), metrics: newMetrics(), logger: cfg.Logger}
	g.pass = g.metrics.forRoute("")
	for _, r := range routes {
		r.metrics = g.metrics.forRoute(r.name)
	}
	store.OnRecordsRemoved(g.cache.remove)
	g.tokenScopes = map[string]bool{}
	for _, r := range routes {
		if r.token != tokenOff {
			g.tokenScopes[r.scope] = true
		}
	}
	if cfg.TokenRate <= 0 || cfg.TokenBurst < 1 {
		return nil, fmt.Errorf("gateway: TokenRate must be positive and TokenBurst at least 1")
	}
	g.tokenLimit = newIPLimiter(cfg.TokenRate, cfg.TokenBurst, 100_000)
	g.Listener = httpx.NewListener("gateway listener", cfg.Addr, g.serve, cfg.Limits, cfg.Logger)
	g.bodies = httpx.NewBodyBudget(cfg.MaxBodyBuffer, cfg.MaxRequestBody)
	return g, nil
}

// Register registers the gateway metrics.
func (g *Gateway) Register(reg prometheus.Registerer) error { return g.metrics.register(reg) }

// Handle serves one client request.
func (g *Gateway) Handle(ctx *fasthttp.RequestCtx) {
	start := time.Now()
	if bad := badFraming(ctx.Request.Header.RawHeaders()); bad != "" {
		httpx.WriteProblem(ctx, httpx.BadRequest, bad)
		ctx.SetConnectionClose()
		g.pass.done(outBadRequest, start)
		return
	}
	release, ok := httpx.ReadBody(ctx, g.cfg.MaxRequestBody, g.bodies)
	if !ok {
		return
	}
	defer release()
	dropTrailers(&ctx.Request.Header)
	if serve := ownEndpoint(ctx.Path()); serve != nil {
		serve(g, ctx)
		return
	}
	t, refused := matchRoute(g.routes, ctx)
	rm := g.pass
	if t.r != nil {
		rm = t.r.metrics
	}
	switch {
	case g.store.SeenRemoved():
		// A removed node's state no longer follows the cluster's: it
		// forwards, replays and records nothing (its writes are refused
		// by the store too).
		httpx.WriteError(ctx, storeapi.ErrRemoved)
		rm.done(outUnavailable, start)
	case refused != "":
		httpx.WriteProblem(ctx, httpx.AmbiguousPath, refused)
		rm.done(outAmbiguous, start)
	case t.r == nil && !g.passBearer(ctx, rm, start): // answered 401
	case t.r == nil || g.idempotent(ctx, t, start): // no route takes it, or it has no key
		g.passthrough(ctx, rm, start)
	}
}

// ownEndpoint returns what serves path when it is one of the gateway's own
// endpoints, or nil. It allocates nothing.
func ownEndpoint(path []byte) func(*Gateway, *fasthttp.RequestCtx) {
	if !bytes.HasPrefix(path, []byte(ownPrefix)) {
		return nil
	}
	return ownEndpoints[string(path)]
}

// Details of the requests whose framing the gateway refuses (RFC 9112 6.3:
// 400, and the connection closed).
const (
	detailSmuggled   = "both Transfer-Encoding and Content-Length were sent (RFC 9112 6.3: a request smuggling attempt)"
	detailBadCoding  = "a Transfer-Encoding other than chunked was sent (RFC 9112 6.3: only chunked frames a request's body)"
	transferEncoding = "transfer-encoding:"
)

// badFraming returns why a request's raw header block leaves its body's
// framing in doubt, or "": Transfer-Encoding beside Content-Length, or a
// Transfer-Encoding other than chunked alone. fasthttp lets chunked win
// over Content-Length and then rewrites both headers, and it takes
// "identity" as no coding at all and drops the header (a body then reads
// as empty, and what follows as the next request), so only the raw block
// shows either. It allocates nothing.
func badFraming(raw []byte) string {
	te, cl, coding := false, false, true
	for len(raw) > 0 {
		line := raw
		i := bytes.IndexByte(raw, '\n')
		if i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		switch {
		case hasPrefixFold(line, transferEncoding):
			te = true
			v := bytes.TrimSpace(line[len(transferEncoding):])
			coding = coding && len(v) == len("chunked") && hasPrefixFold(v, "chunked")
		case hasPrefixFold(line, "content-length:"):
			cl = true
		}
	}
	switch {
	case te && cl:
		return detailSmuggled
	case te && !coding:
		return detailBadCoding
	}
	return ""
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && strings.EqualFold(string(b[:len(prefix)]), prefix)
}

// dropTrailers discards a request's trailer fields, as RFC 9112 7.1.2 lets
// a recipient that removes the chunked coding do (the gateway reads the
// whole body and forwards it with a Content-Length). fasthttp keeps them
// beside the header fields, announced by Trailer or not: Peek and PeekAll
// answer from them, and deleting the Trailer header (hop-by-hop stripping
// does) merges them into the header section. Either way a key, tenant or
// form token sent after the body would count as a header, for the record
// and for the upstream. Values the header section itself holds under an
// announced name are kept. A request without trailers costs one check.
func dropTrailers(h *fasthttp.RequestHeader) {
	names := h.PeekTrailerKeys()
	if len(names) == 0 {
		return
	}
	var gone [][]byte
	for _, n := range names {
		gone = append(gone, bytes.Clone(n))
	}
	var kept []command.Header
	for name, value := range h.All() {
		for _, n := range gone {
			if bytes.Equal(name, n) {
				kept = append(kept, command.Header{Name: bytes.Clone(name), Value: bytes.Clone(value)})
				break
			}
		}
	}
	for _, n := range gone {
		h.DelBytes(n) // from both sections
	}
	h.Del(fasthttp.HeaderTrailer) // nothing left to merge back
	for _, kv := range kept {
		h.AddBytesKV(kv.Name, kv.Value)
	}
}
