package api

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/auth"
	"github.com/idemgate/idemgate/internal/httpx"
)

// Errors of the Authorization header, the detail of a 401.
var (
	errAuthMissing   = errors.New("no Authorization header; send Authorization: Bearer <token>")
	errAuthDuplicate = errors.New("more than one Authorization header")
	errAuthScheme    = errors.New("the Authorization scheme must be Bearer")
	errAuthEmpty     = errors.New("the bearer token is empty")
	errAuthChars     = errors.New("the bearer token must be visible ASCII (0x21-0x7E)")
)

// authRealm is the challenge of every 401 (RFC 6750 section 3).
const authRealm = `Bearer realm="idemgate"`

// SetAccess replaces the API's authorization for every request that starts
// after it returns, so a reload (SIGHUP) needs no restart; a request in
// flight finishes under the Access it started with. nil turns
// authorization off, as a nil Config.Access does.
func (a *API) SetAccess(ac *auth.Access) { a.access.Store(ac) }

// authorize is the API's one authorization check, made before routing on
// the same method and path the router sees: it lets the request through
// (true) or answers 401 (no usable token) or 403 (a token whose role may
// not do this). Nothing of the Authorization header is logged or echoed.
func (a *API) authorize(ctx *fasthttp.RequestCtx, method, path string) bool {
	ac := a.access.Load()
	if ac == nil || ac.Open(path) || roles.public(path) {
		return true
	}
	tok, err := identify(ac, &ctx.Request.Header)
	if err != nil {
		a.logger.Debug("api: unauthorized", "method", method, "path", path, "remote", ctx.RemoteIP().String(), "reason", err.Error())
		httpx.WriteProblem(ctx, httpx.Unauthorized, err.Error())
		ctx.Response.Header.Set("WWW-Authenticate", authRealm)
		return false
	}
	if need := requiredRole(method, path); tok.Role < need {
		a.logger.Debug("api: forbidden", "method", method, "path", path, "token", tok.Name, "role", tok.Role.String())
		httpx.WriteProblem(ctx, httpx.Forbidden,
			fmt.Sprintf("%s %s needs the %s role; token %q has %s", method, path, need, tok.Name, tok.Role))
		return false
	}
	return true
}

// identify finds the token a request presents in its one Authorization
// header.
func identify(ac *auth.Access, h *fasthttp.RequestHeader) (auth.Token, error) {
	vals := h.PeekAll(fasthttp.HeaderAuthorization)
	switch {
	case len(vals) == 0:
		return auth.Token{}, errAuthMissing
	case len(vals) > 1:
		return auth.Token{}, errAuthDuplicate
	}
	secret, err := bearerSecret(vals[0])
	if err != nil {
		return auth.Token{}, err
	}
	return ac.Match(secret)
}

// bearerSecret takes the secret out of an Authorization value: the scheme
// Bearer in any case (RFC 9110 section 11.1), one or more spaces, then
// visible ASCII (RFC 6750's b64token and more: the hash decides).
// Whitespace around the value is not part of it (RFC 9110 section 5.5).
func bearerSecret(v []byte) ([]byte, error) {
	v = bytes.Trim(v, " \t")
	scheme, secret, _ := bytes.Cut(v, []byte(" "))
	if !bytes.EqualFold(scheme, []byte("Bearer")) {
		return nil, errAuthScheme
	}
	secret = bytes.TrimLeft(secret, " ")
	if len(secret) == 0 {
		return nil, errAuthEmpty
	}
	for _, c := range secret {
		if c < 0x21 || c > 0x7e {
			return nil, errAuthChars
		}
	}
	return secret, nil
}
