package gateway

import (
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
)

// The gateway's own endpoints, under /_idem/: they are the gateway's
// answers, never proxied, recorded or matched against the routes. Handle
// looks a request's path up in ownEndpoints once, before routing
// (ownEndpoint); a path outside /_idem/ costs one prefix check.

// tokensPath is where the gateway listener issues form tokens.
const tokensPath = "/_idem/tokens"

const ownPrefix = "/_idem/"

// ownEndpoints maps each own path to what serves it.
var ownEndpoints = map[string]func(*Gateway, *fasthttp.RequestCtx){
	tokensPath:   (*Gateway).issueToken,
	ClientJSPath: func(_ *Gateway, ctx *fasthttp.RequestCtx) { serveClientJS(ctx) },
}

// issueToken is POST /_idem/tokens?scope=S[&ttl=D]: a form token for
// browsers and apps, the same answer as the API's token issue. Anyone may
// ask, so it is bounded: only the scopes of routes that take form tokens,
// a lifetime up to the configured one, and TokenRate per client address
// (429 beyond).
func (g *Gateway) issueToken(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() {
		httpx.WriteProblem(ctx, httpx.MethodNotAllowed, "use POST")
		ctx.Response.Header.Set("Allow", "POST") // after the problem: it resets the answer
		return
	}
	scope := string(ctx.QueryArgs().Peek("scope"))
	if !g.tokenScopes[scope] {
		httpx.WriteProblem(ctx, httpx.InvalidScope, fmt.Sprintf("scope: %.64q: no route takes form tokens in it", scope))
		return
	}
	ttl, ok := httpx.ParseTTL(ctx, "ttl", string(ctx.QueryArgs().Peek("ttl")))
	if !ok {
		return
	}
	if max := g.tokens.DefaultTTL(); ttl > max {
		httpx.WriteProblem(ctx, httpx.InvalidTTL, fmt.Sprintf("ttl: at most %s here (tokens.ttl)", max))
		return
	}
	if !g.tokenLimit.allow(ctx.RemoteIP().String(), time.Now()) {
		httpx.WriteProblem(ctx, httpx.TooManyRequests, "too many form tokens asked for by this address; retry later")
		ctx.Response.Header.Set("Retry-After", "1")
		return
	}
	httpx.IssueToken(ctx, g.tokens, scope, ttl, g.cfg.OpTimeout)
}
