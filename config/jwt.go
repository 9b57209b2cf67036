package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// JWT verifies bearer JWTs at the gateway (the jwt: section): on the
// routes with auth: jwt or tenant: jwt:CLAIM, or on every request with
// require: all. A field left out keeps the default of
// jwtauth.DefaultConfig.
type JWT struct {
	// JWKSURL is where the identity provider publishes its keys (a JWK
	// Set, RFC 7517); KeysFile a JWK Set on disk, reread when it changes.
	// At most one of the two.
	JWKSURL  string `yaml:"jwks_url"`
	KeysFile string `yaml:"keys_file"`
	// SecretFile holds an HS256 shared secret (32 bytes or more).
	SecretFile string `yaml:"secret_file"`
	// Issuer and Audience, when set, are what iss must be and what aud
	// must hold (one of them).
	Issuer   string   `yaml:"issuer"`
	Audience []string `yaml:"audience"`
	// Algorithms are those a token may be signed with (RS256, ES256,
	// EdDSA, HS256); left out: the ones the keys configured serve.
	Algorithms []string `yaml:"algorithms"`
	// Leeway is the clock skew allowed on exp and nbf.
	Leeway Duration `yaml:"leeway"`
	// Require: "routes" (the routes that ask for a token) or "all" (every
	// request the gateway forwards).
	Require string `yaml:"require"`
	// FetchTimeout bounds one fetch of the JWKS URL; Refresh is how often
	// it is fetched again in the background; MinRefetch the least time
	// between two fetches for tokens whose kid is unknown; MaxKeysSize
	// bounds the JWKS.
	FetchTimeout Duration `yaml:"fetch_timeout"`
	Refresh      Duration `yaml:"refresh"`
	MinRefetch   Duration `yaml:"min_refetch"`
	MaxKeysSize  Size     `yaml:"max_keys_size"`
}

// jwtAlgorithms are the algorithms jwt.algorithms may name
// (jwtauth.Algorithms).
var jwtAlgorithms = []string{"RS256", "ES256", "EdDSA", "HS256"}

// claimRe is a claim name: visible ASCII, as namespaced claims
// ("https://example.com/tenant") are written.
var claimRe = regexp.MustCompile(`^[!-~]{1,128}$`)

// minJWTSecret is HS256's shortest key (RFC 7518 3.2).
const minJWTSecret = 32

// The bounds of the jwt section's durations and size.
const (
	maxJWTLeeway      = 5 * time.Minute
	minJWTFetch       = 100 * time.Millisecond
	maxJWTFetch       = time.Minute
	minJWTRefresh     = time.Minute
	minJWTMinRefetch  = time.Second
	minJWTMaxKeysSize = 1 << 10
	maxJWTMaxKeysSize = 16 << 20
)

// validateJWT checks the jwt section, and that the routes that need it
// have it.
func (f *File) validateJWT() error {
	for i, r := range f.Routes {
		at := fmt.Sprintf("routes[%d]", i)
		if f.JWT == nil && strings.HasPrefix(r.Tenant, "jwt:") {
			return fieldErr(at+".tenant", "%q needs the jwt section (where the keys come from)", r.Tenant)
		}
		if f.JWT == nil && r.Auth == "jwt" {
			return fieldErr(at+".auth", "jwt needs the jwt section (where the keys come from)")
		}
	}
	j := f.JWT
	if j == nil {
		return nil
	}
	switch {
	case j.JWKSURL == "" && j.KeysFile == "" && j.SecretFile == "":
		return fieldErr("jwt", "set jwks_url, keys_file or secret_file: where the keys that sign tokens come from")
	case j.JWKSURL != "" && j.KeysFile != "":
		return fieldErr("jwt.keys_file", "set jwks_url or keys_file, not both")
	}
	if j.JWKSURL != "" {
		if err := f.checkJWKSURL(j.JWKSURL); err != nil {
			return err
		}
	}
	if j.KeysFile != "" {
		if _, err := os.Stat(f.Path(j.KeysFile, "")); err != nil {
			return fieldErr("jwt.keys_file", "%v", err)
		}
	}
	if j.SecretFile != "" {
		if err := f.checkJWTSecret(j.SecretFile); err != nil {
			return err
		}
	}
	for i, a := range j.Algorithms {
		field := fmt.Sprintf("jwt.algorithms[%d]", i)
		switch {
		case !slices.Contains(jwtAlgorithms, a):
			return fieldErr(field, "%q: want one of %s", a, strings.Join(jwtAlgorithms, ", "))
		case a == "HS256" && j.SecretFile == "":
			return fieldErr(field, "HS256 needs secret_file")
		case a != "HS256" && j.JWKSURL == "" && j.KeysFile == "":
			return fieldErr(field, "%s needs jwks_url or keys_file", a)
		}
	}
	var err error
	if j.Require, err = oneOf("jwt.require", j.Require, "routes", "all"); err != nil {
		return err
	}
	for _, d := range []struct {
		field    string
		v        Duration
		min, max time.Duration
	}{
		{"jwt.leeway", j.Leeway, 0, maxJWTLeeway},
		{"jwt.fetch_timeout", j.FetchTimeout, minJWTFetch, maxJWTFetch},
		{"jwt.refresh", j.Refresh, minJWTRefresh, 24 * time.Hour},
		{"jwt.min_refetch", j.MinRefetch, minJWTMinRefetch, time.Hour},
	} {
		if d.v != 0 && (d.v.D() < d.min || d.v.D() > d.max) {
			return fieldErr(d.field, "%s: want %s to %s", d.v.D(), d.min, d.max)
		}
	}
	if j.MaxKeysSize != 0 && (j.MaxKeysSize < minJWTMaxKeysSize || j.MaxKeysSize > maxJWTMaxKeysSize) {
		return fieldErr("jwt.max_keys_size", "%d: want 1KiB to 16MiB", j.MaxKeysSize)
	}
	return nil
}

// checkJWKSURL: an https:// URL, or http:// to a loopback address (or
// anywhere with insecure: true): keys fetched in the clear can be
// replaced on the way.
func (f *File) checkJWKSURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fieldErr("jwt.jwks_url", "%q: want an https:// URL", s)
	}
	if u.Scheme == "http" && !f.Insecure {
		ip := net.ParseIP(u.Hostname())
		if u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fieldErr("jwt.jwks_url", "%q: want https:// (http:// only to a loopback address, or with insecure: true): keys fetched in the clear can be replaced on the way", s)
		}
	}
	return nil
}

// checkJWTSecret reads the HS256 secret file: it must exist and hold 32
// bytes or more (a trailing newline not counted).
func (f *File) checkJWTSecret(p string) error {
	b, err := os.ReadFile(f.Path(p, ""))
	if err != nil {
		return fieldErr("jwt.secret_file", "%v", err)
	}
	b = []byte(strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"))
	if len(b) < minJWTSecret {
		return fieldErr("jwt.secret_file", "the secret is %d bytes, want %d or more (HS256's key is as long as its hash)", len(b), minJWTSecret)
	}
	return nil
}
