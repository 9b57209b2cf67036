package api

import (
	"context"
	"log/slog"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/storeapi"
)

// The API's handlers come in groups, one per concern, and each group
// holds only the store interface or the service it calls: a handler of
// the KV keyspace cannot change the membership, nor one of the cluster
// read a record. routes.go hands each route its group's handler.

// handlers are one listener's groups (routes.go's table is built over
// them; over a zero handlers it is the table of roles, never called).
type handlers struct {
	data    *dataHandlers
	cluster *clusterHandlers
	node    *nodeHandlers
	tokens  *tokenHandlers
	once    *onceHandlers
	locks   *lockHandlers
}

// base is what every group shares: the listener's settings and log.
type base struct {
	cfg    *Config
	logger *slog.Logger
}

// dataHandlers answer the KV keyspace, the records, their export, the
// suspects and the stuck work.
type dataHandlers struct {
	*base
	store Data
	// reconcile: scope -> the JSON pointers of its routes' reconcile_id.
	reconcile map[string][][]string
}

// clusterHandlers answer the membership and its changes.
type clusterHandlers struct {
	*base
	store Membership
}

// nodeHandlers answer about this node: health, status, metrics,
// snapshots and the OpenAPI document.
type nodeHandlers struct {
	*base
	store   Node
	metrics fasthttp.RequestHandler
}

// tokenHandlers answer form tokens, onceHandlers once claims,
// lockHandlers fair locks.
type (
	tokenHandlers struct {
		*base
		tokens TokenService
	}
	onceHandlers struct {
		*base
		once OnceService
	}
	lockHandlers struct {
		*base
		locks LockService
	}
)

// opCtx bounds one store call (a write or a linearizable read).
func (b *base) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), b.cfg.OpTimeout)
}

// writeCtx is opCtx for a write. A write sent with an Idempotency-Key
// header is proposed under a request id derived from the key and the whole
// request (method, URI, If-Match, If-None-Match, body): a retry of it within
// the state machine's request-id retention (two minutes) is applied at most
// once and answered with the first attempt's result, so a client that lost
// an answer (a broken connection, a 503 after a timeout) learns what
// happened by sending the same request again. false means it answered 400.
func (b *base) writeCtx(ctx *fasthttp.RequestCtx) (context.Context, context.CancelFunc, bool) {
	vals := ctx.Request.Header.PeekAll("Idempotency-Key")
	if len(vals) == 0 {
		c, cancel := b.writeOpCtx(ctx)
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
	c, cancel := b.writeOpCtx(ctx)
	return storeapi.WithRequestID(c, id), cancel, true
}

// propose is every write handler's one store call, made once its request
// has been read and checked: under the request's Idempotency-Key
// (writeCtx) and the store's deadline. A refused Idempotency-Key is
// answered 400, call's error by fail (httpx.WriteError when nil); false
// means it answered, true that the caller answers call's result.
func propose[T any](b *base, ctx *fasthttp.RequestCtx, call func(context.Context) (T, error), fail func(*fasthttp.RequestCtx, error)) (T, bool) {
	var zero T
	c, cancel, ok := b.writeCtx(ctx)
	if !ok {
		return zero, false
	}
	defer cancel()
	out, err := call(c)
	if err != nil {
		if fail == nil {
			fail = httpx.WriteError
		}
		fail(ctx, err)
		return zero, false
	}
	return out, true
}
