package api

// GET /v1/stuck: work its holder left behind, for reconciliation.

import (
	"encoding/base64"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/ttl"
)

// stuckJSON is one stuck record or claim in GET /v1/stuck.
type stuckJSON struct {
	Kind   string `json:"kind"` // "record" or "once"
	Scope  string `json:"scope"`
	Tenant string `json:"tenant,omitempty"`
	Key    string `json:"key"`
	// LapsedAt is the deadline its holder missed: a record's processing
	// deadline, a claim's lease end.
	LapsedAt string `json:"lapsed_at"`
}

// listStuck lists, earliest deadline first, the gateway records in flight
// past their processing deadline and the once claims begun past their
// lease: ?limit=N (default 100, at most 1000) a page, ?after=CURSOR (a
// page's next) the page after. Linearizable like every API read;
// ?consistency=local reads this node as is.
func (h *dataHandlers) listStuck(ctx *fasthttp.RequestCtx) {
	args := ctx.QueryArgs()
	limit, ok := pageLimit(ctx) // 1000 at most: fsm.MaxStuckPage
	if !ok {
		return
	}
	var after []byte
	if raw := args.Peek("after"); len(raw) > 0 {
		var err error
		after, err = base64.RawURLEncoding.DecodeString(string(raw))
		if err != nil || len(after) < 9 {
			httpx.WriteProblem(ctx, httpx.BadRequest, "after: want the next of a page before, as it was answered")
			return
		}
	}
	c, cancel := h.opCtx()
	page, next, err := h.store.Stuck(c, after, limit, string(args.Peek("consistency")) == "local")
	cancel()
	if err != nil {
		httpx.WriteError(ctx, err)
		return
	}
	out := []stuckJSON{}
	for _, s := range page {
		j := stuckJSON{Kind: s.Kind.String(), LapsedAt: httpx.RFC3339(nsTime(s.At))}
		switch s.Kind {
		case ttl.KindRecord:
			parts := strings.SplitN(string(s.Key), "\x00", 3)
			if len(parts) != 3 {
				continue
			}
			j.Scope, j.Tenant, j.Key = parts[0], parts[1], parts[2]
		case ttl.KindOnce:
			scope, key, ok := strings.Cut(string(s.Key), "\x00")
			if !ok {
				continue
			}
			j.Scope, j.Key = scope, key
		default:
			continue
		}
		out = append(out, j)
	}
	answer := map[string]any{"stuck": out}
	if next != nil {
		answer["next"] = base64.RawURLEncoding.EncodeToString(next)
	}
	httpx.WriteJSON(ctx, fasthttp.StatusOK, answer)
}

// stuckRoutes are the stuck work's.
func (h *dataHandlers) stuckRoutes() []resource {
	return []resource{{path: "/v1/stuck", ops: []op{{method: "GET", id: "stuck", role: read, handle: plain(h.listStuck), doc: opDoc{
		summary:     "Work its holder left behind",
		description: "Gateway records in flight past their processing deadline (the client's request may or may not have reached the upstream) and once claims begun past their lease that nobody took over or completed, earliest deadline first, a page at a time: for reconciliation. idemgate_stuck counts them.",
		params:      []string{"Limit", `{"name": "after", "in": "query", "description": "The next of the page before: the page after it.", "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]+$"}}`, "Consistency"},
		answers: map[int]string{
			200: jsonAnswer("A page of stuck work.", "Stuck"),
			400: "Problem400BadRequestInvalidKey",
		},
	}}}}}
}
