package api

import (
	"bytes"
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
	"go.opentelemetry.io/otel/trace"

	"github.com/idemgate/idemgate/auth"
	"github.com/idemgate/idemgate/internal/httpx"
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
	// Tracer makes the spans of the writes (trace.go); nil: tracing off.
	Tracer trace.Tracer
}

// API is the API listener.
type API struct {
	httpx.Listener
	cfg    Config
	logger *slog.Logger
	access atomic.Pointer[auth.Access] // swapped whole by SetAccess
	bodies *httpx.BodyBudget
	hosts  hostAllowList
	mux    *mux
}

// wrapHandler, set only by this package's tests before any listener
// starts, wraps every API listener's handler: openapi_test.go holds each
// request and its answer against the OpenAPI document there.
var wrapHandler func(fasthttp.RequestHandler) fasthttp.RequestHandler

// New builds the API listener over store and the services; gatherer serves
// /metrics. Each group of handlers is given only the part of store, or the
// service, it calls (handlers.go).
func New(cfg Config, store Store, tok TokenService, onceSvc OnceService, lockSvc LockService, gatherer prometheus.Gatherer) *API {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = 5 * time.Second
	}
	a := &API{cfg: cfg, logger: cfg.Logger, hosts: newHostAllowList(cfg.Hosts)}
	b := &base{cfg: &a.cfg, logger: cfg.Logger}
	g := &handlers{
		data:    &dataHandlers{base: b, store: store, reconcile: reconcilePointers(cfg.ReconcileIDs)},
		cluster: &clusterHandlers{base: b, store: store},
		node: &nodeHandlers{base: b, store: store,
			metrics: fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))},
		tokens: &tokenHandlers{base: b, tokens: tok},
		once:   &onceHandlers{base: b, once: onceSvc},
		locks:  &lockHandlers{base: b, locks: lockSvc},
	}
	a.mux = newMux(g.routes(), strays)
	a.access.Store(cfg.Access)
	h := fasthttp.RequestHandler(a.Handle)
	if wrapHandler != nil {
		h = wrapHandler(h)
	}
	a.Listener = httpx.NewListener("api listener", cfg.Addr, h, cfg.Limits, cfg.Logger)
	a.bodies = httpx.NewBodyBudget(cfg.MaxBodyBuffer, cfg.MaxRequestBody)
	return a
}

// Handle answers one API request: what a web page sent is refused
// (browser.go), then the authorization check, then the route, both on the
// same method and path, and the same table (routes.go), so they cannot
// disagree on what the request is.
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
	a.serve(ctx, method, path)
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
