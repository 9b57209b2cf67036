package gateway

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/storeapi"
	"github.com/idemgate/idemgate/tokens"
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
	Logger                *slog.Logger
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
	tokens   *tokens.Service
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
func New(cfg Config, store Store, tok *tokens.Service) (*Gateway, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	routes, err := compileRoutes(cfg.Routes)
	if err != nil {
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
	g.Listener = httpx.NewListener("gateway listener", cfg.Addr, g.Handle, cfg.Limits, cfg.Logger)
	g.bodies = httpx.NewBodyBudget(cfg.MaxBodyBuffer, cfg.MaxRequestBody)
	return g, nil
}

func newUpstream(cfg Config) (*fasthttp.HostClient, error) {
	u, err := url.Parse(cfg.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("gateway: upstream %q: want http://host:port", cfg.Upstream)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	return &fasthttp.HostClient{
		Dial:                      dialUpstream(3*time.Second, u.Scheme == "https"),
		Addr:                      addr,
		IsTLS:                     u.Scheme == "https",
		Name:                      "idemgate",
		MaxConns:                  cfg.UpstreamConns,
		MaxIdleConnDuration:       4 * time.Second, // shorter than common upstream idle timeouts: a stale pooled connection looks like "sent"
		ReadTimeout:               cfg.UpstreamTimeout,
		WriteTimeout:              cfg.UpstreamTimeout,
		MaxResponseBodySize:       cfg.MaxResponseBody,
		ReadBufferSize:            cfg.MaxResponseHeaderBytes,
		MaxIdemponentCallAttempts: 1,
		SecureErrorLogMessage:     true, // errors do not quote the upstream's header block
		// Never retry: a write retried silently is the double charge
		// idemgate exists to prevent; the client retries with its key.
		RetryIfErr:                    func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
		NoDefaultUserAgentHeader:      true,
	}, nil
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
	path := ctx.Path()
	switch string(path) {
	case "/_idem/tokens":
		g.issueToken(ctx)
		return
	case ClientJSPath:
		serveClientJS(ctx)
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
	case t.r != nil:
		g.idempotent(ctx, t, start)
	default:
		g.passthrough(ctx, rm, start)
	}
}

// issueToken is POST /_idem/tokens?scope=S[&ttl=D]: a form token for
// browsers and apps, the same answer as the API's token issue. Anyone may
// ask, so it is bounded: only the scopes of routes that take form tokens,
// a lifetime up to the configured one, and TokenRate per client address
// (429 beyond).
func (g *Gateway) issueToken(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() {
		httpx.WriteProblem(ctx, httpx.MethodNotAllowed, "use POST")
		ctx.Response.Header.Set("Allow", "POST") // after the problem: it resets the answer
		return
	}
	scope := string(ctx.QueryArgs().Peek("scope"))
	if !g.tokenScopes[scope] {
		httpx.WriteProblem(ctx, httpx.InvalidScope, fmt.Sprintf("scope: %.64q: no route takes form tokens in it", scope))
		return
	}
	ttl, ok := httpx.ParseTTL(ctx, "ttl", string(ctx.QueryArgs().Peek("ttl")))
	if !ok {
		return
	}
	if max := g.tokens.DefaultTTL(); ttl > max {
		httpx.WriteProblem(ctx, httpx.InvalidTTL, fmt.Sprintf("ttl: at most %s here (tokens.ttl)", max))
		return
	}
	if !g.tokenLimit.allow(ctx.RemoteIP().String(), time.Now()) {
		httpx.WriteProblem(ctx, httpx.TooManyRequests, "too many form tokens asked for by this address; retry later")
		ctx.Response.Header.Set("Retry-After", "1")
		return
	}
	httpx.IssueToken(ctx, g.tokens, scope, ttl, g.cfg.OpTimeout)
}

// passthrough proxies a request without idempotency, adding X-Request-Id.
func (g *Gateway) passthrough(ctx *fasthttp.RequestCtx, rm *routeMetrics, start time.Time) {
	if len(ctx.Request.Header.Peek("X-Request-Id")) == 0 {
		ctx.Request.Header.Set("X-Request-Id", uuid.NewString())
	}
	if err := g.forward(ctx, rm); err != nil {
		g.upstreamFailed(ctx, nil, nil, err)
		rm.done(outUpstreamError, start)
		return
	}
	rm.done(outPassthrough, start)
}

// forward sends ctx.Request to the upstream and leaves its answer in
// ctx.Response (fasthttp's reverse-proxy pattern: no copies).
func (g *Gateway) forward(ctx *fasthttp.RequestCtx, rm *routeMetrics) error {
	req := &ctx.Request
	g.toUpstream(ctx)
	t0 := time.Now()
	err := g.doUpstream(req, &ctx.Response, time.Time{})
	rm.upstream.Observe(time.Since(t0).Seconds())
	if err != nil {
		ctx.Response.Reset()
		return err
	}
	stripResponseHopByHop(&ctx.Response.Header)
	return nil
}

// staleRetries bounds the pooled connections one request may find closed by
// the upstream before it gives up (502, nothing sent): several idle
// connections can expire at once.
const staleRetries = 4

// doUpstream sends req (by deadline, if set). A pooled connection that the
// upstream had closed is detected before anything is written (errStaleConn);
// the request then goes on another connection.
func (g *Gateway) doUpstream(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) error {
	for attempt := 0; ; attempt++ {
		if g.halted.Load() {
			return errHalted
		}
		var err error
		if deadline.IsZero() {
			err = g.upstream.Do(req, resp)
		} else {
			err = g.upstream.DoDeadline(req, resp, deadline)
		}
		if !errors.Is(err, errStaleConn) || attempt == staleRetries {
			return err
		}
	}
}

// toUpstream readies ctx.Request for the upstream: hop-by-hop headers
// stripped; the client's address appended to X-Forwarded-For as one
// comma-separated line (a second line would let a client's forged first
// line be read as the whole header by Go's Header.Get and its kin);
// X-Forwarded-Proto set to the scheme the client used, whatever it sent;
// and the upstream's scheme in the URI: it carries the one the client used,
// and HostClient refuses an https URI on a plain upstream
// (ErrHostClientRedirectToDifferentScheme) when the gateway serves TLS.
func (g *Gateway) toUpstream(ctx *fasthttp.RequestCtx) {
	h := &ctx.Request.Header
	proto := "http"
	if ctx.IsTLS() {
		proto = "https"
	}
	if g.upstream.IsTLS {
		ctx.Request.URI().SetScheme("https")
	} else {
		ctx.Request.URI().SetScheme("http")
	}
	stripHopByHop(h)
	var xff []byte
	for _, v := range h.PeekAll("X-Forwarded-For") {
		xff = append(append(xff, v...), ", "...)
	}
	h.Del("X-Forwarded-For") // Set would replace only the first line
	h.SetBytesV("X-Forwarded-For", append(xff, ctx.RemoteIP().String()...))
	h.Set("X-Forwarded-Proto", proto)
}

// nothingSent reports whether an upstream error means the request never
// left: the connection could not be made. Anything else (a timeout, a
// connection broken after writing) may have reached the upstream.
func nothingSent(err error) bool {
	if errors.Is(err, fasthttp.ErrDialTimeout) || errors.Is(err, fasthttp.ErrNoFreeConns) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, errStaleConn) || errors.Is(err, errHalted) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// responseTooLarge reports whether an upstream error means the upstream
// answered, after acting, with more than the gateway reads: headers over
// MaxResponseHeaderBytes, a body over MaxResponseBody.
func responseTooLarge(err error) bool {
	var small *fasthttp.ErrSmallBuffer
	return errors.As(err, &small) || errors.Is(err, fasthttp.ErrBodyTooLarge)
}

// upstreamFailed answers a request whose upstream call failed (502 when
// nothing was sent or the answer is too large to relay, 504 when the
// request may have been carried out) and logs it once. r is nil for a
// passthrough request. Neither the answer nor the log line quotes
// fasthttp's error text: it can hold the upstream's headers (a malformed
// answer is quoted), and a 502 may be stored and replayed to every retry.
func (g *Gateway) upstreamFailed(ctx *fasthttp.RequestCtx, r *route, key []byte, err error) {
	class := upstreamErrorClass(err)
	var record string // what becomes of the key's record
	writeProblem := httpx.WriteProblem
	if r != nil { // an answer about the key's record
		writeProblem = func(ctx *fasthttp.RequestCtx, k httpx.Kind, detail string) { writeKeyProblem(ctx, k, detail, key) }
	}
	switch {
	case nothingSent(err):
		writeProblem(ctx, httpx.UpstreamUnreachable, "the upstream could not be reached ("+class+"); nothing was sent")
		record = "released"
	case responseTooLarge(err):
		writeProblem(ctx, httpx.UpstreamResponseTooLarge, fmt.Sprintf(
			"the upstream answered with more than the gateway reads (headers over %d bytes, or a body over %d bytes): the request was carried out, but its answer cannot be relayed",
			g.cfg.MaxResponseHeaderBytes, g.cfg.MaxResponseBody))
		record = "completed"
	default:
		writeProblem(ctx, httpx.UpstreamTimeout, "the upstream did not answer in time or the connection broke after the request was sent ("+class+")")
		record = "in_flight_until_processing_timeout"
	}
	attrs := []any{"status", ctx.Response.StatusCode(), "error_class", class, "method", string(ctx.Method()), "path", string(ctx.Path())}
	if r != nil {
		attrs = append(attrs, "route", r.name, "scope", r.scope, "key", string(key), "record", record)
	} else {
		attrs = append(attrs, "passthrough", true)
	}
	if text := httpx.NetErrorText(err); text != "" {
		attrs = append(attrs, "error", text)
	}
	g.logger.Warn("upstream failed", attrs...)
}

// upstreamErrorClass names what went wrong with an upstream call, in words
// that never carry the upstream's bytes: for the problem detail, the log
// and whoever alerts on them.
func upstreamErrorClass(err error) string {
	var netErr net.Error
	var op *net.OpError
	switch {
	case errors.Is(err, errHalted):
		return "gateway halted"
	case errors.Is(err, fasthttp.ErrDialTimeout):
		return "connect timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		return "no free upstream connection"
	case errors.Is(err, errStaleConn):
		return "pooled connections closed by the upstream"
	case errors.As(err, &op) && op.Op == "dial":
		return "connect failed"
	case responseTooLarge(err):
		return "response too large"
	case errors.Is(err, fasthttp.ErrTLSHandshakeTimeout):
		return "TLS handshake timeout"
	case errors.Is(err, fasthttp.ErrTimeout), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection closed"
	}
	return "unexpected error" // a malformed answer, a TLS failure, ...
}
