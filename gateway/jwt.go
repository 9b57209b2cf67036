package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/jwtauth"
)

// Bearer JWTs. A route with auth: jwt (or tenant: jwt:CLAIM), or every
// request with RequireJWT, must carry a valid bearer JWT: it is checked
// before anything else is read, stored or forwarded, and a request without
// one gets 401 with an RFC 6750 challenge. With tenant: jwt:CLAIM the
// tenant is the verified token's claim: a subject can scope records only
// by its own name, so one subject's key never replays another's answer.
// The token goes on to the upstream in Authorization as it came.

// bearerRealm is the challenge of every 401 (RFC 6750 3).
const bearerRealm = `Bearer realm="idemgate"`

// bearer checks the request's bearer JWT; for a route with tenant:
// jwt:CLAIM it appends the claim to dst, the tenant. false: it answered
// (401, or 503 while no key can be loaded), and counted the outcome.
func (g *Gateway) bearer(ctx *fasthttp.RequestCtx, r *route, rm *routeMetrics, start time.Time, dst []byte) ([]byte, bool) {
	tok, err := jwtauth.Bearer(ctx.Request.Header.PeekAll(fasthttp.HeaderAuthorization))
	var t jwtauth.Token
	if err == nil {
		t, err = g.cfg.JWT.Verify(context.Background(), tok)
	}
	if err == nil && r != nil && r.tenantClaim != "" {
		var claim string
		if claim, err = t.String(r.tenantClaim); err == nil {
			return append(dst, claim...), true
		}
	}
	if err == nil {
		return dst, true
	}
	switch {
	case errors.Is(err, jwtauth.ErrUnavailable):
		httpx.WriteProblem(ctx, httpx.JWTKeysUnavailable, jwtauth.Description(err))
		rm.done(outUnavailable, start)
		return nil, false
	case errors.Is(err, jwtauth.ErrMissing):
		httpx.WriteProblem(ctx, httpx.BearerRequired, jwtauth.Description(err))
		ctx.Response.Header.Set("WWW-Authenticate", bearerRealm)
	default:
		d := jwtauth.Description(err)
		httpx.WriteProblem(ctx, httpx.InvalidBearer, d)
		ctx.Response.Header.Set("WWW-Authenticate", bearerRealm+`, error="invalid_token", error_description="`+d+`"`)
	}
	rm.done(outUnauthorized, start)
	return nil, false
}

// passBearer checks the bearer JWT of a request no route takes, when
// RequireJWT asks every request for one; false: it answered.
func (g *Gateway) passBearer(ctx *fasthttp.RequestCtx, rm *routeMetrics, start time.Time) bool {
	if !g.cfg.RequireJWT {
		return true
	}
	_, ok := g.bearer(ctx, nil, rm, start, nil)
	return ok
}

// requireJWT makes every route require a bearer JWT under RequireJWT, and
// checks that the routes that require one have a verifier.
func requireJWT(cfg Config, routes []*route) error {
	if cfg.RequireJWT && cfg.JWT == nil {
		return errors.New("gateway: RequireJWT is set and Config.JWT is nil")
	}
	for _, r := range routes {
		r.jwt = r.jwt || cfg.RequireJWT
		if r.jwt && cfg.JWT == nil {
			return fmt.Errorf("gateway: route %s requires a bearer JWT, and Config.JWT is nil", r.name)
		}
	}
	return nil
}
