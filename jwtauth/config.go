package jwtauth

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"time"
)

// Algorithms are the signature algorithms a Verifier knows: the asymmetric
// ones take their keys from a JWKS, HS256 its secret from a file.
var Algorithms = []string{"RS256", "ES256", "EdDSA", "HS256"}

// MaxTokenLen bounds a token: longer ones are refused before anything of
// them is decoded. Tokens with many claims run to a few KiB.
const MaxTokenLen = 16 << 10

// maxKeys bounds the keys one JWKS may hold: identity providers publish
// two to four (the current key and the next or the last).
const maxKeys = 100

// Config configures a Verifier.
type Config struct {
	// JWKSURL is where the identity provider publishes its keys (a JWK
	// Set); KeysFile is a JWK Set on disk. At most one of the two.
	JWKSURL  string
	KeysFile string
	// SecretFile holds HS256's shared secret: 32 bytes or more (a
	// trailing newline is not part of it).
	SecretFile string
	// Issuer, when set, is the iss every token must carry; Audiences,
	// when set, the aud values of which a token must carry one.
	Issuer    string
	Audiences []string
	// Algorithms are those a token may be signed with; empty: RS256,
	// ES256 and EdDSA with a JWKS, and HS256 with a secret. A token of any
	// other algorithm (none among them) is refused before its key is
	// looked for.
	Algorithms []string
	// Leeway is the clock skew allowed on exp and nbf.
	Leeway time.Duration
	// FetchTimeout bounds one load of the JWKS URL (connect, headers,
	// body), and so what a request waits for one.
	FetchTimeout time.Duration
	// Refresh is how often the JWKS URL is loaded again in the background
	// (the request that notices never waits for it).
	Refresh time.Duration
	// MinRefetch is the least time between two loads for tokens whose kid
	// is unknown: a flood of made-up kids costs the key server one
	// request per MinRefetch.
	MinRefetch time.Duration
	// MaxKeysBytes bounds a JWKS, from the URL or the file.
	MaxKeysBytes int64
	Logger       *slog.Logger
}

// DefaultConfig returns the defaults; callers set a key source.
func DefaultConfig() Config {
	return Config{Leeway: 30 * time.Second, FetchTimeout: 3 * time.Second, Refresh: 10 * time.Minute,
		MinRefetch: 30 * time.Second, MaxKeysBytes: 1 << 20}
}

// Errors of a Config.
var (
	errNoSource     = errors.New("jwtauth: no keys: set JWKSURL, KeysFile or SecretFile")
	errTwoSources   = errors.New("jwtauth: JWKSURL and KeysFile are exclusive")
	errBadAlgorithm = errors.New("jwtauth: unknown algorithm")
)

// Validate checks c: a source of keys, URLs and algorithms it can use,
// positive bounds.
func (c Config) Validate() error {
	switch {
	case c.JWKSURL == "" && c.KeysFile == "" && c.SecretFile == "":
		return errNoSource
	case c.JWKSURL != "" && c.KeysFile != "":
		return errTwoSources
	}
	if c.JWKSURL != "" {
		u, err := url.Parse(c.JWKSURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("jwtauth: JWKSURL %q: want an http:// or https:// URL", c.JWKSURL)
		}
	}
	for _, a := range c.Algorithms {
		switch {
		case !slices.Contains(Algorithms, a):
			return fmt.Errorf("%w %q (want one of %v)", errBadAlgorithm, a, Algorithms)
		case a == "HS256" && c.SecretFile == "":
			return fmt.Errorf("jwtauth: algorithm HS256 needs SecretFile")
		case a != "HS256" && c.JWKSURL == "" && c.KeysFile == "":
			return fmt.Errorf("jwtauth: algorithm %s needs JWKSURL or KeysFile", a)
		}
	}
	if c.Leeway < 0 || c.FetchTimeout <= 0 || c.Refresh <= 0 || c.MinRefetch <= 0 || c.MaxKeysBytes <= 0 {
		return errors.New("jwtauth: Leeway may not be negative, and FetchTimeout, Refresh, MinRefetch and MaxKeysBytes must be positive")
	}
	return nil
}

// algorithms are the algorithms c allows.
func (c Config) algorithms() []string {
	if len(c.Algorithms) > 0 {
		return c.Algorithms
	}
	var out []string
	if c.JWKSURL != "" || c.KeysFile != "" {
		out = append(out, "RS256", "ES256", "EdDSA")
	}
	if c.SecretFile != "" {
		out = append(out, "HS256")
	}
	return out
}
