package gateway

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/raftstore"
	"github.com/idemgate/idemgate/tokens"
)

// nodeAPIPrefix is the reserved KV key prefix under which a node's API
// address is recorded when it joins; API keys may not contain control
// bytes, so clients can never touch it.
const nodeAPIPrefix = "\x00node/"

// APIConfig configures the API listener.
type APIConfig struct {
	Addr string
	// NodeAPIs maps node ids to API addresses known from the cluster file.
	NodeAPIs map[string]string
	// OpTimeout bounds one store call (write or linearizable read).
	OpTimeout time.Duration
	Limits
	Logger *slog.Logger
	// Access is who may call which endpoint (see NewAccess); nil means
	// no authorization at all, as on a loopback cluster or in the demo.
	// SetAccess replaces it at runtime.
	Access *Access
}

// API is the API listener.
type API struct {
	listener
	cfg     APIConfig
	store   Store
	tokens  *tokens.Service
	metrics fasthttp.RequestHandler
	logger  *slog.Logger
	access  atomic.Pointer[Access] // swapped whole by SetAccess
	bodies  *bodyBudget
}

// NewAPI builds the API listener over store; gatherer serves /metrics.
func NewAPI(cfg APIConfig, store Store, tok *tokens.Service, gatherer prometheus.Gatherer) *API {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = 5 * time.Second
	}
	a := &API{cfg: cfg, store: store, tokens: tok, logger: cfg.Logger,
		metrics: fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))}
	a.access.Store(cfg.Access)
	a.listener = newListener("api listener", cfg.Addr, a.Handle, cfg.Limits)
	a.listener.srv.StreamRequestBody = true // bodies are read after the token check (body.go)
	a.bodies = newBodyBudget(cfg.MaxBodyBuffer, cfg.MaxRequestBody)
	return a
}

// errorHandler answers what fasthttp refuses before a handler runs:
// oversized bodies and headers, malformed requests, timeouts.
func errorHandler(ctx *fasthttp.RequestCtx, err error) {
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		writeProblem(ctx, fasthttp.StatusRequestEntityTooLarge, "body-too-large", "the request body is over the limit")
	case strings.Contains(err.Error(), "timeout"):
		writeProblem(ctx, fasthttp.StatusRequestTimeout, "bad-request", "the request was not received in time")
	case strings.Contains(err.Error(), "small read buffer") || strings.Contains(err.Error(), "too big"):
		writeProblem(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, "bad-request", "request headers are too large")
	default:
		writeProblem(ctx, fasthttp.StatusBadRequest, "bad-request", "malformed HTTP request: "+err.Error())
	}
	ctx.SetConnectionClose()
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

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
		writeProblem(ctx, fasthttp.StatusBadRequest, "invalid-key", "Idempotency-Key: "+errKeyDuplicate.Error())
		return nil, nil, false
	}
	key, err := parseKey(vals[0])
	if err != nil {
		writeProblem(ctx, fasthttp.StatusBadRequest, "invalid-key", "Idempotency-Key: "+err.Error())
		return nil, nil, false
	}
	h := &ctx.Request.Header
	id := raftstore.RequestIDFor([]byte("api"), key, ctx.Method(), ctx.RequestURI(),
		h.Peek("If-Match"), h.Peek("If-None-Match"), ctx.PostBody())
	c, cancel := a.opCtx()
	return raftstore.WithRequestID(c, id), cancel, true
}

// Handle answers one API request: the authorization check, then the
// route, both on the same method and path so they cannot disagree on what
// the request is.
func (a *API) Handle(ctx *fasthttp.RequestCtx) {
	path := string(ctx.URI().PathOriginal())
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	method := string(ctx.Method())
	if !a.authorize(ctx, method, path) {
		if ctx.Request.IsBodyStream() {
			ctx.SetConnectionClose() // never read a refused caller's body, not even to drain it
		}
		return
	}
	release, ok := readBody(ctx, a.cfg.MaxRequestBody, a.bodies)
	if !ok {
		return
	}
	defer release()
	a.route(ctx, method, path)
}

func (a *API) route(ctx *fasthttp.RequestCtx, method, path string) {
	switch {
	case path == "/healthz":
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString("ok\n")
	case path == "/readyz":
		if !a.store.Ready() {
			writeProblem(ctx, fasthttp.StatusServiceUnavailable, "not-ready", "no known leader, or this node has not applied up to the commit index it learned")
			return
		}
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString("ready\n")
	case path == "/metrics":
		a.metrics(ctx)
	case path == "/v1/tokens":
		a.only(ctx, method, "POST", a.issueToken)
	case path == "/v1/tokens/consume":
		a.only(ctx, method, "POST", a.consumeToken)
	case strings.HasPrefix(path, "/v1/kv/"):
		a.kv(ctx, method, strings.TrimPrefix(path, "/v1/kv/"))
	case strings.HasPrefix(path, "/v1/records/"):
		a.records(ctx, method, strings.TrimPrefix(path, "/v1/records/"))
	case path == "/v1/cluster":
		a.only(ctx, method, "GET", a.cluster)
	case path == "/v1/cluster/nodes":
		a.only(ctx, method, "POST", a.addNode)
	case strings.HasPrefix(path, "/v1/cluster/nodes/"):
		id := strings.TrimPrefix(path, "/v1/cluster/nodes/")
		a.only(ctx, method, "DELETE", func(ctx *fasthttp.RequestCtx) { a.removeNode(ctx, id) })
	case path == "/v1/suspects":
		a.only(ctx, method, "GET", a.listSuspects)
	default:
		writeProblem(ctx, fasthttp.StatusNotFound, "not-found", "no such endpoint: "+path)
	}
}

func (a *API) only(ctx *fasthttp.RequestCtx, method, want string, h fasthttp.RequestHandler) {
	if method != want && !(want == "GET" && method == "HEAD") { // HEAD is GET without the body
		allow := want
		if want == "GET" {
			allow = "GET, HEAD"
		}
		ctx.Response.Header.Set("Allow", allow)
		writeProblem(ctx, fasthttp.StatusMethodNotAllowed, "method-not-allowed", "use "+allow)
		return
	}
	h(ctx)
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
		writeProblem(ctx, fasthttp.StatusUnsupportedMediaType, "unsupported-media-type",
			fmt.Sprintf("Content-Type %q: send the JSON body as application/json", ctx.Request.Header.ContentType()))
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(ctx.PostBody()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeProblem(ctx, fasthttp.StatusBadRequest, "invalid-json", err.Error())
		return false
	}
	if dec.More() {
		writeProblem(ctx, fasthttp.StatusBadRequest, "invalid-json", "trailing data after the JSON object")
		return false
	}
	return true
}

// parseTTL parses an optional Go duration; false means it answered 400.
func parseTTL(ctx *fasthttp.RequestCtx, field, raw string) (time.Duration, bool) {
	if raw == "" {
		return 0, true
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d <= 0 {
		writeProblem(ctx, fasthttp.StatusBadRequest, "invalid-ttl", fmt.Sprintf("%s: %q is not a positive Go duration (30s, 5m, 24h)", field, raw))
		return 0, false
	}
	if d > fsm.MaxTTL {
		writeProblem(ctx, fasthttp.StatusBadRequest, "invalid-ttl", fmt.Sprintf("%s: %q is over the limit of %s", field, raw, fsm.MaxTTL))
		return 0, false
	}
	return d, true
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func nsTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Tokens.

type tokenJSON struct {
	Token     string `json:"token"`
	Scope     string `json:"scope"`
	ExpiresAt string `json:"expires_at"`
}

func (a *API) issueToken(ctx *fasthttp.RequestCtx) {
	var req struct {
		Scope string `json:"scope"`
		TTL   string `json:"ttl"`
	}
	if !decodeJSON(ctx, &req) {
		return
	}
	ttl, ok := parseTTL(ctx, "ttl", req.TTL)
	if !ok {
		return
	}
	issueTokenAnswer(ctx, a.tokens, req.Scope, ttl, a.cfg.OpTimeout)
}

// issueTokenAnswer is shared by the API and the gateway listener's
// POST /_idem/tokens.
func issueTokenAnswer(ctx *fasthttp.RequestCtx, svc *tokens.Service, scope string, ttl, timeout time.Duration) {
	c, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tok, err := svc.Issue(c, scope, ttl)
	switch {
	case errors.Is(err, tokens.ErrBadScope):
		writeProblem(ctx, fasthttp.StatusBadRequest, "invalid-scope", "scope: "+err.Error())
	case errors.Is(err, tokens.ErrBadTTL):
		writeProblem(ctx, fasthttp.StatusBadRequest, "invalid-ttl", "ttl: "+err.Error())
	case err != nil:
		writeStoreError(ctx, err)
	default:
		writeJSON(ctx, fasthttp.StatusCreated, tokenJSON{Token: tok.Value, Scope: tok.Scope, ExpiresAt: rfc3339(tok.ExpiresAt)})
	}
}

func (a *API) consumeToken(ctx *fasthttp.RequestCtx) {
	var req struct {
		Scope string `json:"scope"`
		Token string `json:"token"`
	}
	if !decodeJSON(ctx, &req) {
		return
	}
	c, cancel, ok := a.writeCtx(ctx)
	if !ok {
		return
	}
	defer cancel()
	err := a.tokens.Consume(c, req.Scope, req.Token)
	switch {
	case errors.Is(err, tokens.ErrBadScope):
		writeProblem(ctx, fasthttp.StatusBadRequest, "invalid-scope", "scope: "+err.Error())
	case errors.Is(err, tokens.ErrBadToken):
		// Malformed, not spent: the caller's mistake, not a race it lost.
		writeProblem(ctx, fasthttp.StatusBadRequest, "invalid-token", "token: "+err.Error())
	case errors.Is(err, tokens.ErrUsed):
		writeProblem(ctx, fasthttp.StatusConflict, "token-used", "the token was already consumed, or is unknown or expired")
	case err != nil:
		writeStoreError(ctx, err)
	default:
		writeJSON(ctx, fasthttp.StatusOK, map[string]any{"consumed": true, "scope": req.Scope, "token": req.Token})
	}
}

// KV.

// checkKVKey validates a KV key: 1-255 bytes, no control bytes.
func checkKVKey(key string) error {
	if len(key) == 0 || len(key) > MaxKeyLen {
		return fmt.Errorf("key must be 1-%d bytes, got %d", MaxKeyLen, len(key))
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] == 0x7f {
			return fmt.Errorf("key must not contain control characters (byte %d is 0x%02x)", i, key[i])
		}
	}
	return nil
}

func (a *API) kv(ctx *fasthttp.RequestCtx, method, rawKey string) {
	key, err := url.PathUnescape(rawKey)
	if err == nil {
		err = checkKVKey(key)
	}
	if err != nil {
		writeProblem(ctx, fasthttp.StatusBadRequest, "invalid-key", err.Error())
		return
	}
	switch method {
	case "GET", "HEAD":
		a.kvGet(ctx, key)
	case "PUT":
		a.kvPut(ctx, key)
	case "DELETE":
		a.kvDelete(ctx, key)
	default:
		ctx.Response.Header.Set("Allow", "GET, PUT, DELETE")
		writeProblem(ctx, fasthttp.StatusMethodNotAllowed, "method-not-allowed", "use GET, PUT or DELETE")
	}
}

func writeValue(ctx *fasthttp.RequestCtx, status int, value []byte, version uint64, expiresAt int64) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/octet-stream")
	ctx.Response.Header.Set("ETag", etag(version))
	if expiresAt != 0 {
		ctx.Response.Header.Set("Expires-At", rfc3339(nsTime(expiresAt)))
	}
	ctx.SetBody(value)
}

func (a *API) kvGet(ctx *fasthttp.RequestCtx, key string) {
	c, cancel := a.opCtx()
	defer cancel()
	local := string(ctx.QueryArgs().Peek("consistency")) == "local"
	e, err := a.store.KV(c, []byte(key), local)
	switch {
	case errors.Is(err, fsm.ErrNotFound):
		writeProblem(ctx, fasthttp.StatusNotFound, "not-found", "no such key")
	case err != nil:
		writeStoreError(ctx, err)
	default:
		writeValue(ctx, fasthttp.StatusOK, e.Value, e.Version, e.ExpiresAt)
	}
}

func (a *API) kvPut(ctx *fasthttp.RequestCtx, key string) {
	args := ctx.QueryArgs()
	ttl, ok := parseTTL(ctx, "ttl", string(args.Peek("ttl")))
	if !ok {
		return
	}
	mode, version := fsm.SetPlain, uint64(0)
	nx := string(args.Peek("nx"))
	if nx != "" && nx != "0" && nx != "false" {
		if nx != "1" && nx != "true" {
			writeProblem(ctx, fasthttp.StatusBadRequest, "bad-request", "nx: want 1 or true")
			return
		}
		mode = fsm.SetNX
	}
	if string(ctx.Request.Header.Peek("If-None-Match")) == "*" {
		mode = fsm.SetNX
	}
	if im := ctx.Request.Header.Peek("If-Match"); len(im) > 0 {
		if mode == fsm.SetNX {
			writeProblem(ctx, fasthttp.StatusBadRequest, "bad-request", "If-Match cannot be combined with nx")
			return
		}
		v, err := strconv.ParseUint(strings.Trim(strings.TrimPrefix(string(im), "W/"), `"`), 10, 64)
		if err != nil || v == 0 {
			writeProblem(ctx, fasthttp.StatusBadRequest, "invalid-version", fmt.Sprintf("If-Match: %q is not a version such as \"12\"", im))
			return
		}
		mode, version = fsm.SetCAS, v
	}
	value := append([]byte(nil), ctx.PostBody()...)
	c, cancel, ok := a.writeCtx(ctx)
	if !ok {
		return
	}
	defer cancel()
	res, err := a.store.KVSet(c, []byte(key), value, ttl, mode, version)
	if err != nil {
		writeStoreError(ctx, err)
		return
	}
	switch res.Code {
	case fsm.CodeCreated:
		status := fasthttp.StatusOK
		if mode == fsm.SetNX {
			status = fasthttp.StatusCreated
		}
		writeValue(ctx, status, nil, res.Version, res.ExpiresAt)
	case fsm.CodeOK:
		writeValue(ctx, fasthttp.StatusOK, nil, res.Version, res.ExpiresAt)
	case fsm.CodeExists:
		writeValue(ctx, fasthttp.StatusConflict, res.Value, res.Version, res.ExpiresAt)
	case fsm.CodeVersionMismatch:
		writeProblem(ctx, fasthttp.StatusPreconditionFailed, "version-mismatch",
			fmt.Sprintf("If-Match %s does not match the key's current version", etag(version)))
		if res.Version != 0 {
			ctx.Response.Header.Set("ETag", etag(res.Version))
		}
	default:
		writeStoreError(ctx, res.Err())
	}
}

func (a *API) kvDelete(ctx *fasthttp.RequestCtx, key string) {
	c, cancel, ok := a.writeCtx(ctx)
	if !ok {
		return
	}
	defer cancel()
	res, err := a.store.KVGetDel(c, []byte(key))
	switch {
	case errors.Is(err, fsm.ErrNotFound):
		writeProblem(ctx, fasthttp.StatusNotFound, "not-found", "no such key")
	case err != nil:
		writeStoreError(ctx, err)
	default:
		writeValue(ctx, fasthttp.StatusOK, res.Value, res.Version, 0)
	}
}

// Records.

// RecordJSON is a record as the API shows it.
type RecordJSON struct {
	Scope       string `json:"scope"`
	Tenant      string `json:"tenant"`
	Key         string `json:"key"`
	State       string `json:"state"`
	Fingerprint string `json:"fingerprint"`
	Fence       uint64 `json:"fence"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
	ExpiresAt   string `json:"expires_at,omitempty"`
	Deadline    string `json:"processing_deadline,omitempty"`
	StatusCode  int    `json:"status_code,omitempty"`
	BodyStored  bool   `json:"body_stored"`
	BodyBytes   int    `json:"body_bytes"`
	// Damaged: the stored response fails its checksum on this node, which
	// answers its replays 409 replay-unavailable.
	Damaged bool `json:"damaged,omitempty"`
}

func (a *API) records(ctx *fasthttp.RequestCtx, method, rest string) {
	rawScope, rawKey, ok := strings.Cut(rest, "/")
	scope, err1 := url.PathUnescape(rawScope)
	key, err2 := url.PathUnescape(rawKey)
	if !ok || err1 != nil || err2 != nil || scope == "" || key == "" {
		writeProblem(ctx, fasthttp.StatusBadRequest, "invalid-key", "want /v1/records/{scope}/{key}")
		return
	}
	tenant := string(ctx.QueryArgs().Peek("tenant"))
	if strings.IndexByte(scope+tenant+key, 0) >= 0 {
		writeProblem(ctx, fasthttp.StatusBadRequest, "invalid-key", "scope, tenant and key must not contain NUL")
		return
	}
	rk := fsm.RecordKey(scope, tenant, key)
	c, cancel, ok := a.writeCtx(ctx)
	if !ok {
		return
	}
	defer cancel()
	switch method {
	case "GET":
		rec, err := a.store.Record(c, rk, false)
		switch {
		case errors.Is(err, fsm.ErrNotFound):
			writeProblem(ctx, fasthttp.StatusNotFound, "not-found", "no such record")
		case err != nil:
			writeStoreError(ctx, err)
		default:
			writeJSON(ctx, fasthttp.StatusOK, RecordJSON{
				Scope: scope, Tenant: tenant, Key: key, State: rec.State.String(),
				Fingerprint: hex.EncodeToString(rec.Fingerprint), Fence: rec.Fence,
				CreatedAt: rfc3339(nsTime(rec.CreatedAt)), UpdatedAt: rfc3339(nsTime(rec.UpdatedAt)),
				ExpiresAt: rfc3339(nsTime(rec.ExpiresAt)), Deadline: rfc3339(nsTime(rec.Deadline)),
				StatusCode: rec.Status, BodyStored: rec.State == fsm.StateCompleted && !rec.BodyDropped,
				BodyBytes: len(rec.Body), Damaged: rec.Verify() != nil,
			})
		}
	case "DELETE":
		err := a.store.Release(c, rk, 0)
		if err == nil {
			// Replays are served from each node's own state, without Raft
			// (a completed record changes only by expiry or this call): the
			// release must be applied here before it is acknowledged, or
			// the same request sent here next would still be replayed.
			err = a.store.Barrier(c)
		}
		switch {
		case errors.Is(err, fsm.ErrNotFound):
			writeProblem(ctx, fasthttp.StatusNotFound, "not-found", "no such record")
		case err != nil:
			writeStoreError(ctx, err)
		default:
			writeJSON(ctx, fasthttp.StatusOK, map[string]any{"released": true, "scope": scope, "tenant": tenant, "key": key})
		}
	default:
		ctx.Response.Header.Set("Allow", "GET, DELETE")
		writeProblem(ctx, fasthttp.StatusMethodNotAllowed, "method-not-allowed", "use GET or DELETE")
	}
}

// Cluster.

// ClusterJSON is GET /v1/cluster.
type ClusterJSON struct {
	Leader       string     `json:"leader"`
	Nodes        []NodeJSON `json:"nodes"`
	CommitIndex  uint64     `json:"commit_index"`
	AppliedIndex uint64     `json:"applied_index"`
}

// NodeJSON is one member in ClusterJSON.
type NodeJSON struct {
	ID    string `json:"id"`
	Raft  string `json:"raft"`
	API   string `json:"api"`
	State string `json:"state"`
	Voter bool   `json:"voter"`
}

func (a *API) cluster(ctx *fasthttp.RequestCtx) {
	servers, err := a.store.Servers()
	if err != nil {
		writeStoreError(ctx, err)
		return
	}
	leader, _ := a.store.Leader()
	commit, applied := a.store.Indexes()
	out := ClusterJSON{Leader: leader, Nodes: []NodeJSON{}, CommitIndex: commit, AppliedIndex: applied}
	for _, s := range servers {
		out.Nodes = append(out.Nodes, NodeJSON{ID: s.ID, Raft: s.RaftAddr, API: a.nodeAPI(s.ID), State: s.State, Voter: s.Voter})
	}
	writeJSON(ctx, fasthttp.StatusOK, out)
}

func (a *API) nodeAPI(id string) string {
	if e, err := a.store.KV(context.Background(), []byte(nodeAPIPrefix+id), true); err == nil {
		return string(e.Value)
	}
	return a.cfg.NodeAPIs[id]
}

func (a *API) addNode(ctx *fasthttp.RequestCtx) {
	var req struct {
		ID   string `json:"id"`
		Raft string `json:"raft"`
		API  string `json:"api"`
	}
	if !decodeJSON(ctx, &req) {
		return
	}
	if req.ID == "" || strings.ContainsAny(req.ID, "\x00/ ") || len(req.ID) > 64 {
		writeProblem(ctx, fasthttp.StatusBadRequest, "bad-request", "id: want 1-64 characters without '/', spaces or NUL")
		return
	}
	for field, addr := range map[string]string{"raft": req.Raft, "api": req.API} {
		if _, _, err := net.SplitHostPort(addr); err != nil || addr == "" {
			writeProblem(ctx, fasthttp.StatusBadRequest, "bad-request", fmt.Sprintf("%s: %q is not host:port", field, addr))
			return
		}
	}
	c, cancel := a.opCtx()
	defer cancel()
	if _, err := a.store.KVSet(c, []byte(nodeAPIPrefix+req.ID), []byte(req.API), 0, fsm.SetPlain, 0); err != nil {
		writeStoreError(ctx, err)
		return
	}
	if err := a.store.AddVoter(c, req.ID, req.Raft); err != nil {
		if raftstore.Unavailable(err) {
			writeStoreError(ctx, err)
		} else {
			writeProblem(ctx, fasthttp.StatusConflict, "membership-conflict", err.Error())
		}
		return
	}
	a.clusterAfterChange(ctx, c)
}

// clusterAfterChange answers with the membership once this node has applied
// the change it just made (it may have been forwarded to the leader).
func (a *API) clusterAfterChange(ctx *fasthttp.RequestCtx, c context.Context) {
	if err := a.store.Barrier(c); err != nil {
		writeStoreError(ctx, err)
		return
	}
	a.cluster(ctx)
}

func (a *API) removeNode(ctx *fasthttp.RequestCtx, rawID string) {
	id, err := url.PathUnescape(rawID)
	if err != nil || id == "" {
		writeProblem(ctx, fasthttp.StatusBadRequest, "bad-request", "want /v1/cluster/nodes/{id}")
		return
	}
	c, cancel := a.opCtx()
	defer cancel()
	err = a.store.RemoveServer(c, id)
	switch {
	case errors.Is(err, raftstore.ErrUnknownNode):
		writeProblem(ctx, fasthttp.StatusNotFound, "unknown-node", fmt.Sprintf("no node %q in the cluster", id))
	case err != nil && raftstore.Unavailable(err):
		writeStoreError(ctx, err)
	case err != nil:
		writeProblem(ctx, fasthttp.StatusConflict, "membership-conflict", err.Error())
	default:
		a.clusterAfterChange(ctx, c)
	}
}

// SuspectJSON is one suspected duplicate in GET /v1/suspects.
type SuspectJSON struct {
	At         string `json:"at"`
	Scope      string `json:"scope"`
	Tenant     string `json:"tenant"`
	Key        string `json:"key"`
	EarlierKey string `json:"earlier_key"`
}

// listSuspects lists the replicated suspect log, newest first (?limit=N,
// default 100, at most 1000). Linearizable like every API read, so every
// node lists the same suspects; ?consistency=local reads this node as is.
func (a *API) listSuspects(ctx *fasthttp.RequestCtx) {
	limit := 100
	if raw := ctx.QueryArgs().Peek("limit"); len(raw) > 0 {
		n, err := strconv.Atoi(string(raw))
		if err != nil || n < 1 || n > 1000 {
			writeProblem(ctx, fasthttp.StatusBadRequest, "bad-request", "limit: want 1-1000")
			return
		}
		limit = n
	}
	c, cancel := a.opCtx()
	log, err := a.store.Suspects(c, limit, string(ctx.QueryArgs().Peek("consistency")) == "local")
	cancel()
	if err != nil {
		writeStoreError(ctx, err)
		return
	}
	out := []SuspectJSON{}
	for _, s := range log {
		parts := strings.SplitN(string(s.Key), "\x00", 3)
		earlier := strings.SplitN(string(s.Earlier), "\x00", 3)
		if len(parts) != 3 || len(earlier) != 3 {
			continue
		}
		out = append(out, SuspectJSON{At: rfc3339(nsTime(s.At)), Scope: parts[0], Tenant: parts[1], Key: parts[2], EarlierKey: earlier[2]})
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"suspects": out})
}
