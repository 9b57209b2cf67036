package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/idemgate/idemgate/auth"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/locks"
	"github.com/idemgate/idemgate/once"
	"github.com/idemgate/idemgate/storeapi"
	"github.com/idemgate/idemgate/tokens"
)

// Config configures the API listener.
type Config struct {
	Addr string
	// NodeAPIs maps node ids to API addresses known from the cluster file.
	NodeAPIs map[string]string
	// OpTimeout bounds one store call (write or linearizable read).
	OpTimeout time.Duration
	httpx.Limits
	Logger *slog.Logger
	// Access is who may call which endpoint (see auth.NewAccess); nil means
	// no authorization at all, as on a loopback cluster or in the demo.
	// SetAccess replaces it at runtime.
	Access *auth.Access
	// Hosts are the names (or host:port addresses) a request's Host may
	// name on a plaintext listener beside IP addresses and localhost: the
	// cluster file's API addresses and api.hosts (browser.go).
	Hosts []string
	// Version is the build's version, in GET /v1/status.
	Version string
	// ReconcileIDs are the routes' reconcile_id options by scope
	// (json:/pointer, validated): the records export reads them out of
	// stored responses.
	ReconcileIDs map[string][]string
}

// API is the API listener.
type API struct {
	httpx.Listener
	cfg     Config
	store   Store
	tokens  *tokens.Service
	once    *once.Service
	locks   *locks.Service
	metrics fasthttp.RequestHandler
	logger  *slog.Logger
	access  atomic.Pointer[auth.Access] // swapped whole by SetAccess
	bodies  *httpx.BodyBudget
	hosts   hostAllowList
	// reconcile: scope -> the JSON pointers of its routes' reconcile_id.
	reconcile map[string][][]string
}

// wrapHandler, set only by this package's tests before any listener
// starts, wraps every API listener's handler: openapi_test.go holds each
// request and its answer against the OpenAPI document there.
var wrapHandler func(fasthttp.RequestHandler) fasthttp.RequestHandler

// New builds the API listener over store; gatherer serves /metrics.
func New(cfg Config, store Store, tok *tokens.Service, onceSvc *once.Service, lockSvc *locks.Service, gatherer prometheus.Gatherer) *API {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = 5 * time.Second
	}
	a := &API{cfg: cfg, store: store, tokens: tok, once: onceSvc, locks: lockSvc, logger: cfg.Logger, hosts: newHostAllowList(cfg.Hosts),
		reconcile: reconcilePointers(cfg.ReconcileIDs),
		metrics:   fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))}
	a.access.Store(cfg.Access)
	h := fasthttp.RequestHandler(a.Handle)
	if wrapHandler != nil {
		h = wrapHandler(h)
	}
	a.Listener = httpx.NewListener("api listener", cfg.Addr, h, cfg.Limits, cfg.Logger)
	a.bodies = httpx.NewBodyBudget(cfg.MaxBodyBuffer, cfg.MaxRequestBody)
	return a
}

func (a *API) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), a.cfg.OpTimeout)
}

// writeCtx is opCtx for a write. A write sent with an Idempotency-Key
// header is proposed under a request id derived from the key and the whole
// request (method, URI, If-Match, If-None-Match, body): a retry of it within
// the state machine's request-id retention (two minutes) is applied at most
// once and answered with the first attempt's result, so a client that lost
// an answer (a broken connection, a 503 after a timeout) learns what
// happened by sending the same request again. false means it answered 400.
func (a *API) writeCtx(ctx *fasthttp.RequestCtx) (context.Context, context.CancelFunc, bool) {
	vals := ctx.Request.Header.PeekAll("Idempotency-Key")
	if len(vals) == 0 {
		c, cancel := a.opCtx()
		return c, cancel, true
	}
	if len(vals) > 1 {
		httpx.WriteProblem(ctx, httpx.InvalidKey, "Idempotency-Key: "+httpx.ErrKeyDuplicate.Error())
		return nil, nil, false
	}
	key, err := httpx.ParseKey(vals[0])
	if err != nil {
		httpx.WriteProblem(ctx, httpx.InvalidKey, "Idempotency-Key: "+err.Error())
		return nil, nil, false
	}
	h := &ctx.Request.Header
	id := storeapi.RequestIDFor([]byte("api"), key, ctx.Method(), ctx.RequestURI(),
		h.Peek("If-Match"), h.Peek("If-None-Match"), ctx.PostBody())
	c, cancel := a.opCtx()
	return storeapi.WithRequestID(c, id), cancel, true
}

// Handle answers one API request: what a web page sent is refused
// (browser.go), then the authorization check, then the route, both on the
// same method and path so they cannot disagree on what the request is.
func (a *API) Handle(ctx *fasthttp.RequestCtx) {
	path := string(ctx.URI().PathOriginal())
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	method := string(ctx.Method())
	if !a.fromBrowser(ctx) || !a.authorize(ctx, method, path) || !a.noForm(ctx) {
		if ctx.Request.IsBodyStream() {
			ctx.SetConnectionClose() // never read a refused caller's body, not even to drain it
		}
		return
	}
	release, ok := httpx.ReadBody(ctx, a.cfg.MaxRequestBody, a.bodies)
	if !ok {
		return
	}
	defer release()
	a.route(ctx, method, path)
}

func (a *API) route(ctx *fasthttp.RequestCtx, method, path string) {
	switch {
	case path == "/healthz":
		a.only(ctx, method, "GET", a.healthz)
	case path == "/readyz":
		a.only(ctx, method, "GET", a.readyz)
	case path == "/metrics":
		a.only(ctx, method, "GET", a.metrics)
	case path == openAPIPath:
		a.only(ctx, method, "GET", a.openAPI)
	case path == "/v1/tokens":
		a.only(ctx, method, "POST", a.issueToken)
	case path == "/v1/tokens/consume":
		a.only(ctx, method, "POST", a.consumeToken)
	case strings.HasPrefix(path, "/v1/kv/"):
		a.kv(ctx, method, strings.TrimPrefix(path, "/v1/kv/"))
	case strings.HasPrefix(path, "/v1/locks/"):
		a.locksRoute(ctx, method, strings.TrimPrefix(path, "/v1/locks/"))
	case strings.HasPrefix(path, "/v1/once/"):
		a.onceRoute(ctx, method, strings.TrimPrefix(path, "/v1/once/"))
	case path == exportPath:
		a.only(ctx, method, "GET", a.exportRecords)
	case strings.HasPrefix(path, "/v1/records/"):
		a.records(ctx, method, strings.TrimPrefix(path, "/v1/records/"))
	case path == "/v1/status":
		a.only(ctx, method, "GET", a.status)
	case path == "/v1/cluster":
		a.only(ctx, method, "GET", a.cluster)
	case path == "/v1/cluster/nodes":
		a.only(ctx, method, "POST", a.addNode)
	case strings.HasPrefix(path, "/v1/cluster/nodes/") && strings.HasSuffix(path, "/promote"):
		id := strings.TrimSuffix(strings.TrimPrefix(path, "/v1/cluster/nodes/"), "/promote")
		a.only(ctx, method, "POST", func(ctx *fasthttp.RequestCtx) { a.changeNode(ctx, id, a.store.Promote) })
	case strings.HasPrefix(path, "/v1/cluster/nodes/"):
		id := strings.TrimPrefix(path, "/v1/cluster/nodes/")
		a.only(ctx, method, "DELETE", func(ctx *fasthttp.RequestCtx) { a.changeNode(ctx, id, a.store.RemoveServer) })
	case path == "/v1/suspects":
		a.only(ctx, method, "GET", a.listSuspects)
	case path == "/v1/stuck":
		a.only(ctx, method, "GET", a.listStuck)
	case path == "/v1/snapshot" && method == fasthttp.MethodPost:
		a.takeSnapshot(ctx)
	case path == "/v1/snapshot":
		a.only(ctx, method, "GET", a.snapshot)
		if ctx.Response.StatusCode() == fasthttp.StatusMethodNotAllowed {
			ctx.Response.Header.Set("Allow", "GET, HEAD, POST")
		}
	default:
		httpx.WriteProblem(ctx, httpx.NotFound, "no such endpoint: "+path)
	}
}

func (a *API) healthz(ctx *fasthttp.RequestCtx) {
	if !a.store.Alive() {
		httpx.WriteProblem(ctx, httpx.NotAlive, "this node's Raft or state machine has stopped (see its log); restart it")
		return
	}
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.SetBodyString("ok\n")
}

func (a *API) readyz(ctx *fasthttp.RequestCtx) {
	if why := a.store.NotReady(); why != "" {
		httpx.WriteProblem(ctx, httpx.NotReady, why)
		return
	}
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.SetBodyString("ready\n")
}

func (a *API) only(ctx *fasthttp.RequestCtx, method, want string, h fasthttp.RequestHandler) {
	if method != want && !(want == "GET" && method == "HEAD") { // HEAD is GET without the body
		allow := want
		if want == "GET" {
			allow = "GET, HEAD"
		}
		httpx.WriteProblem(ctx, httpx.MethodNotAllowed, "use "+allow)
		ctx.Response.Header.Set("Allow", allow)
		return
	}
	h(ctx)
}

// flagParam reads a yes/no query parameter (1 or true, 0 or false, absent:
// no); false ok means it answered 400.
func flagParam(ctx *fasthttp.RequestCtx, name string) (on, ok bool) {
	v := ctx.QueryArgs().Peek(name)
	switch string(v) {
	case "", "0", "false":
		return false, true
	case "1", "true":
		return true, true
	}
	httpx.WriteProblem(ctx, httpx.BadRequest, fmt.Sprintf("%s: %q: want 1 or 0", name, v))
	return false, false
}

// decodeJSON decodes a JSON body strictly; false means it answered 415 or
// 400. The body must be declared application/json (parameters such as
// charset allowed): a browser sends text/plain, form and multipart bodies
// cross-origin without asking (a CORS "simple" request), so a page could
// otherwise make a visitor's browser call a JSON endpoint. The type is
// checked before the body is looked at.
func decodeJSON(ctx *fasthttp.RequestCtx, v any) bool {
	ct, _, _ := strings.Cut(string(ctx.Request.Header.ContentType()), ";")
	if !strings.EqualFold(strings.TrimSpace(ct), "application/json") {
		httpx.WriteProblem(ctx, httpx.UnsupportedMediaType,
			fmt.Sprintf("Content-Type %q: send the JSON body as application/json", ctx.Request.Header.ContentType()))
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(ctx.PostBody()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		httpx.WriteProblem(ctx, httpx.InvalidJSON, err.Error())
		return false
	}
	if dec.More() {
		httpx.WriteProblem(ctx, httpx.InvalidJSON, "trailing data after the JSON object")
		return false
	}
	return true
}

func nsTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
