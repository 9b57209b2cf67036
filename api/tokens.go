package api

// The API's form tokens: issue and consume.

import (
	"context"
	"errors"

	"github.com/valyala/fasthttp"

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
