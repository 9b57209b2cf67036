package gateway

// The API's form tokens: issue and consume.

import (
	"context"
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/tokens"
)

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
		writeProblem(ctx, probInvalidScope, "scope: "+err.Error())
	case errors.Is(err, tokens.ErrBadTTL):
		writeProblem(ctx, probInvalidTTL, "ttl: "+err.Error())
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
		writeProblem(ctx, probInvalidScope, "scope: "+err.Error())
	case errors.Is(err, tokens.ErrBadToken):
		// Malformed, not spent: the caller's mistake, not a race it lost.
		writeProblem(ctx, probInvalidToken, "token: "+err.Error())
	case errors.Is(err, tokens.ErrUsed):
		writeProblem(ctx, probTokenUsed, "the token was already consumed, or is unknown or expired")
	case err != nil:
		writeStoreError(ctx, err)
	default:
		writeJSON(ctx, fasthttp.StatusOK, map[string]any{"consumed": true, "scope": req.Scope, "token": req.Token})
	}
}
