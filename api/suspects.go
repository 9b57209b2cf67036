package api

// The API's list of suspected duplicates.

import (
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
)

// suspectJSON is one suspected duplicate in GET /v1/suspects.
type suspectJSON struct {
	At         string `json:"at"`
	Scope      string `json:"scope"`
	Tenant     string `json:"tenant"`
	Key        string `json:"key"`
	EarlierKey string `json:"earlier_key"`
}

// listSuspects lists the replicated suspect log, newest first (?limit=N,
// default 100, at most 1000). Linearizable like every API read, so every
// node lists the same suspects; ?consistency=local reads this node as is.
func (h *dataHandlers) listSuspects(ctx *fasthttp.RequestCtx) {
	limit, ok := pageLimit(ctx)
	if !ok {
		return
	}
	c, cancel := h.opCtx()
	log, err := h.store.Suspects(c, limit, string(ctx.QueryArgs().Peek("consistency")) == "local")
	cancel()
	if err != nil {
		httpx.WriteError(ctx, err)
		return
	}
	out := []suspectJSON{}
	for _, s := range log {
		parts := strings.SplitN(string(s.Key), "\x00", 3)
		earlier := strings.SplitN(string(s.Earlier), "\x00", 3)
		if len(parts) != 3 || len(earlier) != 3 {
			continue
		}
		out = append(out, suspectJSON{At: httpx.RFC3339(nsTime(s.At)), Scope: parts[0], Tenant: parts[1], Key: parts[2], EarlierKey: earlier[2]})
	}
	httpx.WriteJSON(ctx, fasthttp.StatusOK, map[string]any{"suspects": out})
}

// pageLimit is a list's ?limit=N: 1-1000, default 100; false when it
// answered 400.
func pageLimit(ctx *fasthttp.RequestCtx) (int, bool) {
	raw := ctx.QueryArgs().Peek("limit")
	if len(raw) == 0 {
		return 100, true
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil || n < 1 || n > 1000 {
		httpx.WriteProblem(ctx, httpx.BadRequest, "limit: want 1-1000")
		return 0, false
	}
	return n, true
}

// suspectRoutes are the suspects list's.
func (h *dataHandlers) suspectRoutes() []resource {
	return []resource{{path: "/v1/suspects", ops: []op{{method: "GET", id: "suspects", role: read, handle: plain(h.listSuspects), doc: opDoc{
		summary:     "Suspected duplicates",
		description: "The replicated log of suspected duplicates (two keys, one body digest, one route and tenant, within the window), newest first.",
		params:      []string{"Limit", "Consistency"},
		answers: map[int]string{
			200: jsonAnswer("The suspects.", "Suspects"),
			400: "Problem400BadRequestInvalidKey",
		},
	}}}}}
}
