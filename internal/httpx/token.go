package httpx

import (
	"context"
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/tokens"
)

// issuedToken is the answer to issuing a form token.
type issuedToken struct {
	Token     string `json:"token"`
	Scope     string `json:"scope"`
	ExpiresAt string `json:"expires_at"`
}

// TokenIssuer issues form tokens: *tokens.Service, as each face declares
// it among the services it takes.
type TokenIssuer interface {
	Issue(ctx context.Context, scope string, ttl time.Duration) (tokens.Token, error)
}

// IssueToken issues a form token for scope and answers with it (201), or
// with the problem: the one answer of the API's POST /v1/tokens and the
// gateway's POST /_idem/tokens.
func IssueToken(ctx *fasthttp.RequestCtx, svc TokenIssuer, scope string, ttl, timeout time.Duration) {
	c, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tok, err := svc.Issue(c, scope, ttl)
	switch {
	case errors.Is(err, tokens.ErrBadScope):
		WriteProblem(ctx, InvalidScope, "scope: "+err.Error())
	case errors.Is(err, tokens.ErrBadTTL):
		WriteProblem(ctx, InvalidTTL, "ttl: "+err.Error())
	case err != nil:
		WriteError(ctx, err)
	default:
		WriteJSON(ctx, fasthttp.StatusCreated, issuedToken{Token: tok.Value, Scope: tok.Scope, ExpiresAt: RFC3339(tok.ExpiresAt)})
	}
}
