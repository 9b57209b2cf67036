package gateway

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
)

// Role is what an API token may do; each role may do all that the one
// before it may. It starts at 1 so that a token built without a role is
// refused by NewAccess rather than read as RoleRead.
type Role int

const (
	// RoleRead may read: GET and HEAD on every endpoint.
	RoleRead Role = iota + 1
	// RoleApp is an application's: reads, the KV API, issuing and
	// consuming form tokens.
	RoleApp
	// RoleAdmin may do everything, releasing records and changing the
	// membership included.
	RoleAdmin
)

// Authorization errors. The exported ones come from configuring an Access;
// the others are the detail of a 401.
var (
	ErrUnknownRole    = errors.New("unknown role (want read, app or admin)")
	ErrUnknownOpen    = errors.New("unknown open endpoint (want healthz, readyz or metrics)")
	ErrTokenName      = errors.New("an API token needs a name")
	ErrTokenHash      = errors.New("an API token needs the SHA-256 hash of its secret")
	ErrTokenDuplicate = errors.New("two API tokens share a name or a secret")

	errAuthMissing   = errors.New("no Authorization header; send Authorization: Bearer <token>")
	errAuthDuplicate = errors.New("more than one Authorization header")
	errAuthScheme    = errors.New("the Authorization scheme must be Bearer")
	errAuthEmpty     = errors.New("the bearer token is empty")
	errAuthChars     = errors.New("the bearer token must be visible ASCII (0x21-0x7E)")
	errAuthUnknown   = errors.New("unknown bearer token")
)

// authRealm is the challenge of every 401 (RFC 6750 section 3).
const authRealm = `Bearer realm="idemgate"`

var roleNames = [...]string{RoleRead: "read", RoleApp: "app", RoleAdmin: "admin"}

// ParseRole reads a role as the config file names it: read, app or admin.
func ParseRole(s string) (Role, error) {
	for r, name := range roleNames {
		if name != "" && name == s {
			return Role(r), nil
		}
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownRole, s)
}

func (r Role) String() string {
	if r >= RoleRead && r <= RoleAdmin {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// APIToken is one bearer token of the API listener. Only the SHA-256 hash
// of its secret is kept, so neither the config nor a memory dump gives the
// secret away. The secret is what follows "Bearer " in the Authorization
// header: visible ASCII, whitespace around it is not part of it (so a
// secret file's trailing newline must not be hashed with it).
type APIToken struct {
	Name   string // for logs and 403 answers; never the secret
	Role   Role
	SHA256 [32]byte
}

// Access is who may use the API listener: the tokens and the endpoints
// that need none. It is never changed once built; a reload builds another
// and hands it to (*API).SetAccess.
type Access struct {
	tokens []APIToken
	open   map[string]bool // request paths that need no token
}

// openPaths are the endpoints an Access may leave open, by the names the
// config file uses. They change nothing and say little, and the probes and
// scrapers that call them often cannot carry a token.
var openPaths = map[string]string{"healthz": "/healthz", "readyz": "/readyz", "metrics": "/metrics"}

// NewAccess checks tokens (a name, a role and a hash each; no two sharing
// a name or a hash, since one secret must mean one role) and open (names
// among healthz, readyz and metrics). open == nil leaves all three open;
// an empty, non-nil open closes them all.
func NewAccess(tokens []APIToken, open []string) (*Access, error) {
	if open == nil {
		open = []string{"healthz", "readyz", "metrics"}
	}
	ac := &Access{tokens: append([]APIToken(nil), tokens...), open: map[string]bool{}}
	for _, name := range open {
		path, ok := openPaths[name]
		if !ok {
			return nil, fmt.Errorf("%w: %q", ErrUnknownOpen, name)
		}
		ac.open[path] = true
	}
	names, hashes := map[string]bool{}, map[[32]byte]bool{}
	for i, t := range ac.tokens {
		var err error
		switch {
		case t.Name == "":
			err = ErrTokenName
		case t.Role < RoleRead || t.Role > RoleAdmin:
			err = ErrUnknownRole
		case t.SHA256 == [32]byte{}:
			err = ErrTokenHash
		case names[t.Name] || hashes[t.SHA256]:
			err = ErrTokenDuplicate
		}
		if err != nil {
			return nil, fmt.Errorf("API token %d (%q): %w", i, t.Name, err)
		}
		names[t.Name], hashes[t.SHA256] = true, true
	}
	return ac, nil
}

// SetAccess replaces the API's authorization for every request that starts
// after it returns, so a reload (SIGHUP) needs no restart; a request in
// flight finishes under the Access it started with. nil turns
// authorization off, as a nil APIConfig.Access does.
func (a *API) SetAccess(ac *Access) { a.access.Store(ac) }

// authorize is the API's one authorization check, made before routing on
// the same method and path the router sees: it lets the request through
// (true) or answers 401 (no usable token) or 403 (a token whose role may
// not do this). Nothing of the Authorization header is logged or echoed.
func (a *API) authorize(ctx *fasthttp.RequestCtx, method, path string) bool {
	ac := a.access.Load()
	if ac == nil || ac.open[path] {
		return true
	}
	tok, err := ac.identify(&ctx.Request.Header)
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

// requiredRole is the least role that may send method to path. Reads are
// every role's but the backup's; an application writes the KV API and form tokens; every
// other change (releasing records, membership, and any endpoint added
// later) is an administrator's until a rule here says otherwise.
func requiredRole(method, path string) Role {
	switch {
	case path == "/v1/snapshot": // a read, but of everything: every stored body and unspent token
		return RoleAdmin
	case method == fasthttp.MethodGet || method == fasthttp.MethodHead:
		return RoleRead
	case strings.HasPrefix(path, "/v1/kv/"):
		return RoleApp
	case method == fasthttp.MethodPost && (path == "/v1/tokens" || path == "/v1/tokens/consume"):
		return RoleApp
	}
	return RoleAdmin
}

// identify finds the token a request presents in its one Authorization
// header.
func (ac *Access) identify(h *fasthttp.RequestHeader) (APIToken, error) {
	vals := h.PeekAll(fasthttp.HeaderAuthorization)
	switch {
	case len(vals) == 0:
		return APIToken{}, errAuthMissing
	case len(vals) > 1:
		return APIToken{}, errAuthDuplicate
	}
	secret, err := bearerSecret(vals[0])
	if err != nil {
		return APIToken{}, err
	}
	return ac.match(secret)
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

// Authenticate finds the token whose secret has the SHA-256 sum, for a
// listener that receives the secret itself (the Redis protocol's AUTH)
// rather than an Authorization header: its name and role, or an error.
// It takes the hash so that such a listener keeps no secret, yet can check
// a connection's credential again when the tokens are reloaded.
func (ac *Access) Authenticate(sum [sha256.Size]byte) (name string, role Role, err error) {
	t, err := ac.matchSum(sum)
	return t.Name, t.Role, err
}

// match finds the token whose hash is secret's. It compares with every
// configured hash in constant time and does not stop at a match, so the
// time it takes tells nothing of which token matched, or how much of one.
func (ac *Access) match(secret []byte) (APIToken, error) { return ac.matchSum(sha256.Sum256(secret)) }

func (ac *Access) matchSum(sum [sha256.Size]byte) (APIToken, error) {
	found := -1
	for i := range ac.tokens {
		eq := subtle.ConstantTimeCompare(sum[:], ac.tokens[i].SHA256[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return APIToken{}, errAuthUnknown
	}
	return ac.tokens[found], nil
}
