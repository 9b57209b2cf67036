package api

// The API's form tokens: issue and consume.

import (
	"context"
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/tokens"
)

func (h *tokenHandlers) issueToken(ctx *fasthttp.RequestCtx) {
	var req struct {
		Scope string `json:"scope"`
		TTL   string `json:"ttl"`
	}
	if !decodeJSON(ctx, &req) {
		return
	}
	ttl, ok := httpx.ParseTTL(ctx, "ttl", req.TTL)
	if !ok {
		return
	}
	httpx.IssueToken(ctx, h.tokens, req.Scope, ttl, h.cfg.OpTimeout)
}

func (h *tokenHandlers) consumeToken(ctx *fasthttp.RequestCtx) {
	var req struct {
		Scope string `json:"scope"`
		Token string `json:"token"`
	}
	if !decodeJSON(ctx, &req) {
		return
	}
	_, ok := propose(h.base, ctx, func(c context.Context) (struct{}, error) {
		return struct{}{}, h.tokens.Consume(c, req.Scope, req.Token)
	}, writeConsumeError)
	if ok {
		httpx.WriteJSON(ctx, fasthttp.StatusOK, map[string]any{"consumed": true, "scope": req.Scope, "token": req.Token})
	}
}

// writeConsumeError answers a consume's error.
func writeConsumeError(ctx *fasthttp.RequestCtx, err error) {
	switch {
	case errors.Is(err, tokens.ErrBadScope):
		httpx.WriteProblem(ctx, httpx.InvalidScope, "scope: "+err.Error())
	case errors.Is(err, tokens.ErrBadToken):
		// Malformed, not spent: the caller's mistake, not a race it lost.
		httpx.WriteProblem(ctx, httpx.InvalidToken, "token: "+err.Error())
	case errors.Is(err, tokens.ErrUsed):
		httpx.WriteProblem(ctx, httpx.TokenUsed, "the token was already consumed, or is unknown or expired")
	default:
		httpx.WriteError(ctx, err)
	}
}

// routes are form tokens': issue and consume.
func (h *tokenHandlers) routes() []resource {
	return []resource{
		{path: "/v1/tokens", ops: []op{{method: "POST", id: "issueToken", role: app, handle: plain(h.issueToken),
			stores: []command.Type{command.TypeTokenIssue}, doc: opDoc{
				summary:     "Issue a form token",
				description: "A fresh form token (a UUID v4) for scope, spent by one consume. A retried issue makes a second token: Idempotency-Key is ignored here.",
				body:        jsonRequest("The scope, and the lifetime (default tokens.ttl).", "IssueRequest"),
				answers: map[int]string{
					201: jsonAnswer("The token.", "IssuedToken"),
					400: "Problem400BadRequestInvalidJsonInvalidKeyInvalidScopeInvalidTtl",
				},
			}}}},
		{path: "/v1/tokens/consume", ops: []op{{method: "POST", id: "consumeToken", role: app, handle: plain(h.consumeToken),
			stores: []command.Type{command.TypeTokenConsume}, doc: opDoc{
				summary:     "Consume a form token",
				description: "GETDEL of the token: 200 the first time; 409 token-used for every later call, and for an unknown or expired token.",
				params:      []string{"IdempotencyKey"},
				body:        jsonRequest("The token and the scope it was issued for.", "ConsumeRequest"),
				answers: map[int]string{
					200: jsonAnswer("Consumed now.", "Consumed"),
					400: "Problem400BadRequestInvalidJsonInvalidKeyInvalidScopeInvalidToken",
					409: "Problem409TokenUsed",
				},
			}}}},
	}
}
