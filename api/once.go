package api

// Once claims: POST /v1/once/{scope}/{key}/begin|renew|complete|release and
// GET /v1/once/{scope}/{key} (package once). The path's segments are
// percent-decoded one by one, so a key may hold an encoded slash (%2F).

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/once"
	"github.com/idemgate/idemgate/tokens"
)

// defaultLease is a begin's or a renew's lease without ?lease=.
const defaultLease = 30 * time.Second

// beginAnswer is a begin's answer: begun (yours) or completed.
type beginAnswer struct {
	State          string  `json:"state"`
	Fence          uint64  `json:"fence"`
	LeaseExpiresAt string  `json:"lease_expires_at,omitempty"`
	TakenOver      bool    `json:"taken_over,omitempty"`
	Result         *[]byte `json:"result,omitempty"` // a pointer: an empty result is sent as ""
}

// claimAnswer is GET's answer.
type claimAnswer struct {
	Scope          string  `json:"scope"`
	Key            string  `json:"key"`
	State          string  `json:"state"`
	Fence          uint64  `json:"fence"`
	LeaseExpiresAt string  `json:"lease_expires_at,omitempty"`
	CreatedAt      string  `json:"created_at"`
	UpdatedAt      string  `json:"updated_at"`
	ExpiresAt      string  `json:"expires_at"`
	Result         *[]byte `json:"result,omitempty"`
}

// fenceRequest is the body of renew, complete and release.
type fenceRequest struct {
	Fence  *uint64 `json:"fence"`
	Result *[]byte `json:"result"`
}

// oncePath reads /v1/once/{scope}/{key}[/call]: two segments, each
// percent-decoded (a slash in the key is %2F).
func oncePath(ctx *fasthttp.RequestCtx, p []string) bool {
	scope, err := url.PathUnescape(p[0])
	if err == nil {
		err = tokens.CheckScope(scope)
	}
	if err != nil {
		httpx.WriteProblem(ctx, httpx.InvalidScope, "scope: "+err.Error())
		return false
	}
	key, err := url.PathUnescape(p[1])
	if err == nil {
		_, err = httpx.CheckKey([]byte(key))
	}
	if err != nil {
		httpx.WriteProblem(ctx, httpx.InvalidKey, "key: "+strings.Replace(err.Error(), "idempotency key", "key", 1))
		return false
	}
	p[0], p[1] = scope, key
	return true
}

// onceStray answers a path under /v1/once/ that no route takes: a call
// that is none of the four (after its scope and key are checked), or too
// few or too many segments.
func onceStray(ctx *fasthttp.RequestCtx, rest string) {
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		httpx.WriteProblem(ctx, httpx.NotFound, "want /v1/once/{scope}/{key} or /v1/once/{scope}/{key}/begin|renew|complete|release (a slash in the key is %2F)")
		return
	}
	if oncePath(ctx, parts[:2]) {
		httpx.WriteProblem(ctx, httpx.NotFound, fmt.Sprintf("no such once call %q: begin, renew, complete or release", parts[2]))
	}
}

// leaseParam reads ?lease= (a Go duration, up to once.MaxLease); false
// means it answered 400.
func leaseParam(ctx *fasthttp.RequestCtx) (time.Duration, bool) {
	raw := string(ctx.QueryArgs().Peek("lease"))
	if raw == "" {
		return defaultLease, true
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d <= 0 || d > once.MaxLease {
		httpx.WriteProblem(ctx, httpx.InvalidTTL, fmt.Sprintf("lease: %q: want a positive Go duration up to %s (30s, 5m)", raw, once.MaxLease))
		return 0, false
	}
	return d, true
}

func (h *onceHandlers) onceBegin(ctx *fasthttp.RequestCtx, scope, key string) {
	lease, ok := leaseParam(ctx)
	if !ok {
		return
	}
	out, ok := propose(h.base, ctx, func(c context.Context) (once.Outcome, error) {
		return h.once.Begin(c, scope, key, ctx.PostBody(), lease)
	}, writeBeginError)
	switch {
	case !ok:
	case out.State == command.ClaimBegun:
		httpx.WriteJSON(ctx, fasthttp.StatusCreated, beginAnswer{State: "begun", Fence: out.Fence,
			LeaseExpiresAt: httpx.RFC3339(out.LeaseEnd), TakenOver: out.TakenOver})
	case out.State == command.ClaimCompleted:
		httpx.WriteJSON(ctx, fasthttp.StatusOK, beginAnswer{State: "completed", Fence: out.Fence, Result: nonNil(out.Result)})
	default:
		httpx.WriteProblem(ctx, httpx.InProgress, fmt.Sprintf("fence %d holds the claim; its lease expires at %s", out.Fence, httpx.RFC3339(out.LeaseEnd)))
		// Seconds until the holder's lease ends (rounded up, at least 1):
		// a begin then takes over if the holder neither renewed nor completed.
		secs := max(1, int64((time.Until(out.LeaseEnd)+time.Second-1)/time.Second))
		ctx.Response.Header.Set("Retry-After", strconv.FormatInt(secs, 10))
	}
}

// nonNil makes an empty result answer "" rather than leave the field out.
func nonNil(b []byte) *[]byte {
	if b == nil {
		b = []byte{}
	}
	return &b
}

// fenceBody decodes a holder's body; withResult: complete's, which needs a
// result. false means it answered.
func fenceBody(ctx *fasthttp.RequestCtx, withResult bool) (fenceRequest, bool) {
	var req fenceRequest
	if !decodeJSON(ctx, &req) {
		return req, false
	}
	switch {
	case req.Fence == nil:
		httpx.WriteProblem(ctx, httpx.InvalidJSON, `fence: required, the fence a begin answered`)
	case *req.Fence == 0:
		httpx.WriteProblem(ctx, httpx.BadRequest, "fence: 0 is never handed out; send the fence a begin answered")
	case withResult && req.Result == nil:
		httpx.WriteProblem(ctx, httpx.InvalidJSON, `result: required, the work's result in base64 ("" for none)`)
	case !withResult && req.Result != nil:
		httpx.WriteProblem(ctx, httpx.InvalidJSON, `result: only a complete carries one`)
	default:
		return req, true
	}
	return req, false
}

func (h *onceHandlers) onceRenew(ctx *fasthttp.RequestCtx, scope, key string) {
	lease, ok := leaseParam(ctx)
	if !ok {
		return
	}
	h.holderCall(ctx, false, func(c context.Context, fence uint64, _ []byte) (map[string]any, error) {
		end, err := h.once.Renew(c, scope, key, fence, lease)
		return map[string]any{"fence": fence, "lease_expires_at": httpx.RFC3339(end)}, err
	})
}

func (h *onceHandlers) onceComplete(ctx *fasthttp.RequestCtx, scope, key string) {
	h.holderCall(ctx, true, func(c context.Context, fence uint64, result []byte) (map[string]any, error) {
		return map[string]any{"state": "completed", "fence": fence}, h.once.Complete(c, scope, key, fence, result)
	})
}

func (h *onceHandlers) onceRelease(ctx *fasthttp.RequestCtx, scope, key string) {
	h.holderCall(ctx, false, func(c context.Context, fence uint64, _ []byte) (map[string]any, error) {
		return map[string]any{"released": true, "fence": fence}, h.once.Release(c, scope, key, fence)
	})
}

// holderCall runs a holder's call (renew, complete, release) on its
// decoded body and answers 200 with what call returned, or its error.
func (h *onceHandlers) holderCall(ctx *fasthttp.RequestCtx, withResult bool, call func(c context.Context, fence uint64, result []byte) (map[string]any, error)) {
	req, ok := fenceBody(ctx, withResult)
	if !ok {
		return
	}
	var result []byte
	if req.Result != nil {
		result = *req.Result
	}
	ans, ok := propose(h.base, ctx, func(c context.Context) (map[string]any, error) { return call(c, *req.Fence, result) }, writeOnceError)
	if ok {
		httpx.WriteJSON(ctx, fasthttp.StatusOK, ans)
	}
}

func (h *onceHandlers) onceGet(ctx *fasthttp.RequestCtx, scope, key string) {
	c, cancel := h.opCtx()
	defer cancel()
	cl, err := h.once.Get(c, scope, key)
	if errors.Is(err, command.ErrNotFound) {
		httpx.WriteProblem(ctx, httpx.NotFound, "no claim for this scope and key (never begun, released, or past its retention)")
		return
	}
	if err != nil {
		writeOnceError(ctx, err)
		return
	}
	ans := claimAnswer{Scope: scope, Key: key, State: cl.State.String(), Fence: cl.Fence,
		CreatedAt: httpx.RFC3339(nsTime(cl.CreatedAt)), UpdatedAt: httpx.RFC3339(nsTime(cl.UpdatedAt)),
		ExpiresAt: httpx.RFC3339(nsTime(cl.ExpiresAt))}
	if cl.State == command.ClaimBegun {
		ans.LeaseExpiresAt = httpx.RFC3339(nsTime(cl.LeaseEnd))
	} else {
		ans.Result = nonNil(cl.Result)
	}
	httpx.WriteJSON(ctx, fasthttp.StatusOK, ans)
}

// writeBeginError answers a begin's error.
func writeBeginError(ctx *fasthttp.RequestCtx, err error) {
	if errors.Is(err, once.ErrKeyReuse) {
		httpx.WriteProblem(ctx, httpx.KeyReuse, "the key's claim was begun with another payload (its SHA-256 differs)")
		return
	}
	writeOnceError(ctx, err)
}

func writeOnceError(ctx *fasthttp.RequestCtx, err error) {
	switch {
	case errors.Is(err, once.ErrStaleFence):
		httpx.WriteProblem(ctx, httpx.StaleFence, err.Error())
	case errors.Is(err, tokens.ErrBadScope):
		httpx.WriteProblem(ctx, httpx.InvalidScope, "scope: "+err.Error())
	case errors.Is(err, once.ErrBadLease):
		httpx.WriteProblem(ctx, httpx.InvalidTTL, "lease: "+err.Error())
	default:
		httpx.WriteError(ctx, err)
	}
}

// routes are once claims': read one, and the holder's four calls.
func (h *onceHandlers) routes() []resource {
	return []resource{
		{path: "/v1/once/{scope}/{key}", check: oncePath, ops: []op{{method: "GET", id: "getClaim", role: read, handle: with2(h.onceGet), doc: opDoc{
			summary:     "Read a once claim",
			description: "The claim as the cluster holds it (a linearizable read): begun with its holder's fence and lease end, or completed with its result.",
			params:      []string{"OnceScope", "OnceKey"},
			answers: map[int]string{
				200: jsonAnswer("The claim.", "Claim"),
				400: "Problem400InvalidKeyInvalidScope",
				404: "Problem404NotFound",
			},
		}}}},
		{path: "/v1/once/{scope}/{key}/begin", check: oncePath, ops: []op{{method: "POST", id: "beginOnce", role: app, handle: with2(h.onceBegin),
			stores: []command.Type{command.TypeOnceBegin}, doc: opDoc{
				summary:     "Begin work at most once",
				description: "The body is the payload: its SHA-256 is the claim's fingerprint. 201: yours, do the work under the fence, renew before the lease ends, then complete (or release). 200: done by someone, here is the result. 409 in-progress while another holder's lease is live; a begin after it ran out takes over with a higher fence. 422 key-reuse for another payload.",
				params:      []string{"OnceScope", "OnceKey", "Lease", "IdempotencyKey"},
				body:        `{"description": "The payload (any bytes but a form's; bounded by limits.max_request_body).", "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}}}`,
				answers: map[int]string{
					200: jsonAnswer("Completed: the stored result.", "OnceCompleted"),
					201: jsonAnswer("Yours: the fence and the lease.", "OnceBegun"),
					400: "Problem400BadRequestInvalidKeyInvalidScopeInvalidTtl",
					409: "Problem409InProgress",
					422: "Problem422KeyReuse",
				},
			}}}},
		{path: "/v1/once/{scope}/{key}/renew", check: oncePath, ops: []op{{method: "POST", id: "renewOnce", role: app, handle: with2(h.onceRenew),
			stores: []command.Type{command.TypeOnceRenew}, doc: opDoc{
				summary:     "Renew a lease",
				description: "Extends the holder's lease to ?lease= (30s) from now while it is live; 409 stale-fence once it was lost (ran out, taken over, released, completed).",
				params:      []string{"OnceScope", "OnceKey", "Lease", "IdempotencyKey"},
				body:        jsonRequest("The holder's fence.", "FenceRequest"),
				answers: map[int]string{
					200: jsonAnswer("The new lease end.", "Renewed"),
					400: "Problem400BadRequestInvalidJsonInvalidKeyInvalidScopeInvalidTtl",
					409: "Problem409StaleFence",
				},
			}}}},
		{path: "/v1/once/{scope}/{key}/complete", check: oncePath, ops: []op{{method: "POST", id: "completeOnce", role: app, handle: with2(h.onceComplete),
			stores: []command.Type{command.TypeOnceComplete}, doc: opDoc{
				summary:     "Complete with the result",
				description: "Stores the holder's result; every later begin answers it. 409 stale-fence if another caller took over: its result is kept, this one is not.",
				params:      []string{"OnceScope", "OnceKey", "IdempotencyKey"},
				body:        jsonRequest("The holder's fence and the result.", "CompleteRequest"),
				answers: map[int]string{
					200: jsonAnswer("Stored.", "OnceDone"),
					400: "Problem400BadRequestInvalidJsonInvalidKeyInvalidScope",
					409: "Problem409StaleFence",
				},
			}}}},
		{path: "/v1/once/{scope}/{key}/release", check: oncePath, ops: []op{{method: "POST", id: "releaseOnce", role: app, handle: with2(h.onceRelease),
			stores: []command.Type{command.TypeOnceRelease}, doc: opDoc{
				summary:     "Release: the work failed",
				description: "Drops the holder's begun claim: the next begin runs the work again, with a higher fence. 409 stale-fence when the fence does not hold it (or it is completed).",
				params:      []string{"OnceScope", "OnceKey", "IdempotencyKey"},
				body:        jsonRequest("The holder's fence.", "FenceRequest"),
				answers: map[int]string{
					200: jsonAnswer("Released.", "OnceReleased"),
					400: "Problem400BadRequestInvalidJsonInvalidKeyInvalidScope",
					409: "Problem409StaleFence",
				},
			}}}},
	}
}
