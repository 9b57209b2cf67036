package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
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
// ErrUnknownToken is a secret that matches no token (the detail of a 401).
var (
	ErrUnknownRole    = errors.New("unknown role (want read, app or admin)")
	ErrUnknownOpen    = errors.New("unknown open endpoint (want healthz, readyz or metrics)")
	ErrTokenName      = errors.New("an API token needs a name")
	ErrTokenHash      = errors.New("an API token needs the SHA-256 hash of its secret")
	ErrTokenDuplicate = errors.New("two API tokens share a name or a secret")
	ErrUnknownToken   = errors.New("unknown bearer token")
)

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

// Token is one bearer token (of the API listener, and the Redis protocol's
// AUTH). Only the SHA-256 hash
// of its secret is kept, so neither the config nor a memory dump gives the
// secret away. The secret is what follows "Bearer " in the Authorization
// header: visible ASCII, whitespace around it is not part of it (so a
// secret file's trailing newline must not be hashed with it).
type Token struct {
	Name   string // for logs and 403 answers; never the secret
	Role   Role
	SHA256 [32]byte
}

// Access is who may use the API listener and the Redis protocol: the
// tokens and the API endpoints that need none. It is never changed once
// built; a reload builds another and hands it to the listeners.
type Access struct {
	tokens []Token
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
func NewAccess(tokens []Token, open []string) (*Access, error) {
	if open == nil {
		open = []string{"healthz", "readyz", "metrics"}
	}
	ac := &Access{tokens: append([]Token(nil), tokens...), open: map[string]bool{}}
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

// Authenticate finds the token whose secret has the SHA-256 sum, for a
// listener that receives the secret itself (the Redis protocol's AUTH)
// rather than an Authorization header: its name and role, or an error.
// It takes the hash so that such a listener keeps no secret, yet can check
// a connection's credential again when the tokens are reloaded.
func (ac *Access) Authenticate(sum [sha256.Size]byte) (name string, role Role, err error) {
	t, err := ac.matchSum(sum)
	return t.Name, t.Role, err
}

// Open reports whether the request path needs no token.
func (ac *Access) Open(path string) bool { return ac.open[path] }

// Match finds the token whose hash is secret's (the bearer token of an
// Authorization header). It compares with every
// configured hash in constant time and does not stop at a match, so the
// time it takes tells nothing of which token matched, or how much of one.
func (ac *Access) Match(secret []byte) (Token, error) { return ac.matchSum(sha256.Sum256(secret)) }

func (ac *Access) matchSum(sum [sha256.Size]byte) (Token, error) {
	found := -1
	for i := range ac.tokens {
		eq := subtle.ConstantTimeCompare(sum[:], ac.tokens[i].SHA256[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return Token{}, ErrUnknownToken
	}
	return ac.tokens[found], nil
}
