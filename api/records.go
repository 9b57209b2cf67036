package api

// The API's idempotency records: read one, release one by hand.

import (
	"context"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/httpx"
)

// recordJSON is a record as the API shows it.
type recordJSON struct {
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

// recordPath reads /v1/records/{scope}/{key}?tenant=: the scope is one
// segment, the key the rest of the path (a slash is part of it), each
// percent-decoded.
func recordPath(ctx *fasthttp.RequestCtx, p []string) bool {
	scope, err1 := url.PathUnescape(p[0])
	key, err2 := url.PathUnescape(p[1])
	if err1 != nil || err2 != nil || scope == "" || key == "" {
		httpx.WriteProblem(ctx, httpx.InvalidKey, "want /v1/records/{scope}/{key}")
		return false
	}
	if strings.IndexByte(scope+string(ctx.QueryArgs().Peek("tenant"))+key, 0) >= 0 {
		httpx.WriteProblem(ctx, httpx.InvalidKey, "scope, tenant and key must not contain NUL")
		return false
	}
	p[0], p[1] = scope, key
	return true
}

// recordKey is the record recordPath read, and its tenant.
func recordKey(ctx *fasthttp.RequestCtx, scope, key string) (rk []byte, tenant string) {
	tenant = string(ctx.QueryArgs().Peek("tenant"))
	return command.RecordKey(scope, tenant, key), tenant
}

func (h *dataHandlers) recordGet(ctx *fasthttp.RequestCtx, scope, key string) {
	rk, tenant := recordKey(ctx, scope, key)
	c, cancel := h.opCtx() // a read: an Idempotency-Key header means nothing here
	defer cancel()
	rec, err := h.store.Record(c, rk, false)
	if recordFailed(ctx, err) {
		return
	}
	httpx.WriteJSON(ctx, fasthttp.StatusOK, recordJSON{
		Scope: scope, Tenant: tenant, Key: key, State: rec.State.String(),
		Fingerprint: hex.EncodeToString(rec.Fingerprint), Fence: rec.Fence,
		CreatedAt: httpx.RFC3339(nsTime(rec.CreatedAt)), UpdatedAt: httpx.RFC3339(nsTime(rec.UpdatedAt)),
		ExpiresAt: httpx.RFC3339(nsTime(rec.ExpiresAt)), Deadline: httpx.RFC3339(nsTime(rec.Deadline)),
		StatusCode: rec.Status, BodyStored: rec.State == command.StateCompleted && !rec.BodyDropped,
		BodyBytes: len(rec.Body), Damaged: rec.Verify() != nil,
	})
}

// recordFailed answers err, the store's answer about a record: 404 when
// there is none; false when err is nil.
func recordFailed(ctx *fasthttp.RequestCtx, err error) bool {
	switch {
	case errors.Is(err, command.ErrNotFound):
		httpx.WriteProblem(ctx, httpx.NotFound, "no such record")
	case err != nil:
		httpx.WriteError(ctx, err)
	default:
		return false
	}
	return true
}

func (h *dataHandlers) recordRelease(ctx *fasthttp.RequestCtx, scope, key string) {
	rk, tenant := recordKey(ctx, scope, key)
	_, ok := propose(h.base, ctx, func(c context.Context) (struct{}, error) {
		if err := h.store.Release(c, rk, 0); err != nil {
			return struct{}{}, err
		}
		// Replays are served from each node's own state, without Raft
		// (a completed record changes only by expiry or this call): the
		// release must be applied here before it is acknowledged, or
		// the same request sent here next would still be replayed.
		return struct{}{}, h.store.Barrier(c)
	}, func(ctx *fasthttp.RequestCtx, err error) { recordFailed(ctx, err) })
	if ok {
		httpx.WriteJSON(ctx, fasthttp.StatusOK, map[string]any{"released": true, "scope": scope, "tenant": tenant, "key": key})
	}
}

// recordRoutes are a record's: read it, release it.
func (h *dataHandlers) recordRoutes() []resource {
	return []resource{{path: "/v1/records/{scope}/{key...}", check: recordPath, params: []string{"RecordScope", "RecordKey", "Tenant"}, ops: []op{
		{method: "GET", id: "recordGet", role: read, handle: with2(h.recordGet), doc: opDoc{
			summary:     "Read an idempotency record",
			description: "What the gateway holds for a key: its state, fingerprint, times and stored answer's status.",
			answers: map[int]string{
				200: jsonAnswer("The record.", "Record"),
				400: "Problem400BadRequestInvalidKey",
				404: "Problem404NotFound",
			},
		}},
		{method: "DELETE", id: "recordRelease", role: admin, handle: with2(h.recordRelease), stores: []command.Type{command.TypeRecordRelease}, doc: opDoc{
			summary:     "Release a key by hand",
			description: "Removes the record, so the key's next request is a first attempt; applied on this node before the answer, so a replay from it cannot follow.",
			params:      []string{"IdempotencyKey"},
			answers: map[int]string{
				200: jsonAnswer("Released.", "Released"),
				400: "Problem400BadRequestInvalidKey",
				404: "Problem404NotFound",
			},
		}},
	}}}
}
