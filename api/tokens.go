package api

// The API's form tokens: issue and consume.

import (
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/tokens"
)

func (a *API) issueToken(ctx *fasthttp.RequestCtx) {
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
	httpx.IssueToken(ctx, a.tokens, req.Scope, ttl, a.cfg.OpTimeout)
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
		httpx.WriteProblem(ctx, httpx.InvalidScope, "scope: "+err.Error())
	case errors.Is(err, tokens.ErrBadToken):
		// Malformed, not spent: the caller's mistake, not a race it lost.
		httpx.WriteProblem(ctx, httpx.InvalidToken, "token: "+err.Error())
	case errors.Is(err, tokens.ErrUsed):
		httpx.WriteProblem(ctx, httpx.TokenUsed, "the token was already consumed, or is unknown or expired")
	case err != nil:
		httpx.WriteError(ctx, err)
	default:
		httpx.WriteJSON(ctx, fasthttp.StatusOK, map[string]any{"consumed": true, "scope": req.Scope, "token": req.Token})
	}
}
