package jwtauth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Why a request is refused. Every error Verify and Claims.String return is
// one of these, wrapped with what was wrong.
var (
	// ErrMissing: no bearer token was sent (no Authorization header, or
	// another scheme): 401 with a bare challenge (RFC 6750 3.1).
	ErrMissing = errors.New("no bearer token")
	// ErrInvalid: the token is not one this gateway accepts (malformed,
	// bad signature, expired, wrong issuer or audience, an unknown key, a
	// claim missing or of the wrong type): 401 invalid_token.
	ErrInvalid = errors.New("invalid token")
	// ErrUnavailable: no key was ever loaded (the JWKS URL failed), so
	// no token can be checked: 503, the client retries.
	ErrUnavailable = errors.New("token keys unavailable")
)

// Verifier verifies bearer JWTs. It is safe for concurrent use.
type Verifier struct {
	cfg    Config
	parser *jwt.Parser
	keys   *keyCache
	tokens tokenCache
	now    func() time.Time // time.Now; tests move it
}

// New builds a Verifier and reads its key and secret files (an error wraps
// ErrKeysFile or ErrSecretFile); it does not fetch the JWKS URL: Load does.
func New(cfg Config) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	v := &Verifier{cfg: cfg, keys: newKeyCache(cfg), now: time.Now}
	opts := []jwt.ParserOption{jwt.WithValidMethods(cfg.algorithms()), jwt.WithLeeway(cfg.Leeway),
		jwt.WithExpirationRequired(), jwt.WithStrictDecoding(), jwt.WithTimeFunc(func() time.Time { return v.now() })}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if len(cfg.Audiences) > 0 {
		opts = append(opts, jwt.WithAudience(cfg.Audiences...))
	}
	v.parser = jwt.NewParser(opts...)
	if cfg.JWKSURL == "" {
		if err := v.keys.load(); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Load loads the keys now, from every source, and waits for it (at most
// FetchTimeout for the URL). A failure keeps the keys held.
func (v *Verifier) Load() error { return v.keys.load() }

// Token is a verified token's claims.
type Token struct{ claims jwt.MapClaims }

// Verify checks a bearer token: its length, its form, its algorithm, its
// signature with the key its kid names (or the secret, for HS256), and its
// exp, nbf, iss and aud. It waits at most FetchTimeout, for a load of the
// keys when the kid is unknown. A token verified before with the keys
// held, whose exp and nbf still admit it, is not verified again
// (tokencache.go).
func (v *Verifier) Verify(ctx context.Context, token string) (Token, error) {
	if len(token) > MaxTokenLen {
		return Token{}, fmt.Errorf("%w: the token is %d bytes, more than %d", ErrInvalid, len(token), MaxTokenLen)
	}
	now := v.now()
	set := v.keys.current(now)
	sum := sha256.Sum256([]byte(token))
	if claims, ok := v.tokens.get(sum, set, now, v.cfg.Leeway); ok {
		return Token{claims}, nil
	}
	claims := jwt.MapClaims{}
	_, err := v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		var key any
		var err error
		key, set, err = v.key(ctx, t, set, now)
		return key, err
	})
	if err == nil {
		v.tokens.put(sum, set, claims)
		return Token{claims}, nil
	}
	// The key function's own error says it best, without jwt's "token is
	// unverifiable: error while executing keyfunc".
	if own := (*keyError)(nil); errors.As(err, &own) {
		return Token{}, own.err
	}
	return Token{}, fmt.Errorf("%w: %v", ErrInvalid, err)
}

// keyError carries the key function's error through jwt's wrapping.
type keyError struct{ err error }

func (e *keyError) Error() string { return e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

// key finds the key a token is verified with, in set, the keys held: the
// secret for HS256, else the key its kid names, of the type its algorithm
// needs. A kid the held keys lack makes the keys load again (refetch). It
// returns the keys it found the key in.
func (v *Verifier) key(ctx context.Context, t *jwt.Token, set *keySet, now time.Time) (any, *keySet, error) {
	if _, ok := t.Header["crit"]; ok {
		// RFC 7515 4.1.11: extensions a recipient does not understand
		// make the token invalid, and this one understands none.
		return nil, set, &keyError{fmt.Errorf("%w: the token's header has crit, and no extension is understood here", ErrInvalid)}
	}
	alg := t.Method.Alg()
	if alg == "HS256" {
		if set == nil || set.secret == nil {
			return nil, set, &keyError{fmt.Errorf("%w: no HS256 secret is loaded", ErrUnavailable)}
		}
		return set.secret, set, nil
	}
	kid := ""
	if k, ok := t.Header["kid"]; ok {
		s, ok := k.(string)
		if !ok {
			return nil, set, &keyError{fmt.Errorf("%w: the header's kid is not a string", ErrInvalid)}
		}
		kid = s
	}
	pk, ok := lookup(set, kid)
	if !ok {
		var err error
		set, err = v.keys.refetch(ctx, now)
		if pk, ok = lookup(set, kid); !ok {
			if set == nil {
				return nil, set, &keyError{fmt.Errorf("%w: %v", ErrUnavailable, err)}
			}
			return nil, set, &keyError{fmt.Errorf("%w: no key with kid %q (the keys were loaded again at most once per %s)", ErrInvalid, kid, v.cfg.MinRefetch)}
		}
	}
	if pk.alg != alg || !fits(alg, pk.key) {
		return nil, set, &keyError{fmt.Errorf("%w: the key with kid %q is for %s, the token is %s", ErrInvalid, kid, pk.alg, alg)}
	}
	return pk.key, set, nil
}

func lookup(set *keySet, kid string) (publicKey, bool) {
	if set == nil {
		return publicKey{}, false
	}
	pk, ok := set.byKID[kid]
	return pk, ok
}

// fits reports whether key is of the type alg verifies with (jwt checks
// it too; this says so before).
func fits(alg string, key any) bool {
	switch key.(type) {
	case *rsa.PublicKey:
		return alg == "RS256"
	case *ecdsa.PublicKey:
		return alg == "ES256"
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

// String returns the string claim name: present, a string, not empty,
// without control characters (it becomes part of a record's key and of
// log lines). An error wraps ErrInvalid.
func (t Token) String(name string) (string, error) {
	v, ok := t.claims[name]
	if !ok {
		return "", fmt.Errorf("%w: the token has no %s claim", ErrInvalid, name)
	}
	s, ok := v.(string)
	switch {
	case !ok:
		return "", fmt.Errorf("%w: the token's %s claim is not a string", ErrInvalid, name)
	case s == "":
		return "", fmt.Errorf("%w: the token's %s claim is empty", ErrInvalid, name)
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", fmt.Errorf("%w: the token's %s claim holds control characters", ErrInvalid, name)
	}
	return s, nil
}

// Bearer takes the token out of a request's Authorization values: one
// header, the scheme Bearer in any case (RFC 9110 11.1), spaces, then the
// token in a JWT's alphabet (base64url and dots). No header, or another
// scheme, is ErrMissing; anything else wrong ErrInvalid.
func Bearer(values [][]byte) (string, error) {
	switch len(values) {
	case 0:
		return "", fmt.Errorf("%w: send Authorization: Bearer <token>", ErrMissing)
	case 1:
	default:
		return "", fmt.Errorf("%w: more than one Authorization header", ErrInvalid)
	}
	v := bytes.Trim(values[0], " \t")
	scheme, tok, _ := bytes.Cut(v, []byte(" "))
	if !strings.EqualFold(string(scheme), "Bearer") {
		return "", fmt.Errorf("%w: the Authorization scheme is not Bearer", ErrMissing)
	}
	tok = bytes.TrimLeft(tok, " ")
	if len(tok) == 0 {
		return "", fmt.Errorf("%w: the bearer token is empty", ErrInvalid)
	}
	if len(tok) > MaxTokenLen {
		return "", fmt.Errorf("%w: the token is %d bytes, more than %d", ErrInvalid, len(tok), MaxTokenLen)
	}
	for _, c := range tok {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return "", fmt.Errorf("%w: the token is not a JWT (base64url parts and dots)", ErrInvalid)
		}
	}
	return string(tok), nil
}

// Description is err's text as RFC 6750's error_description may carry it
// (printable ASCII but '"' and '\'), without the sentinel it wraps, at
// most 200 bytes.
func Description(err error) string {
	s := err.Error()
	for _, p := range []error{ErrInvalid, ErrMissing, ErrUnavailable} {
		s = strings.TrimPrefix(s, p.Error()+": ")
	}
	b := make([]byte, 0, min(len(s), 200))
	for i := 0; i < len(s) && len(b) < 200; i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			c = '\''
			if s[i] < 0x20 || s[i] > 0x7e {
				c = '?'
			}
		}
		b = append(b, c)
	}
	return string(b)
}
