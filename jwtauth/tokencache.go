package jwtauth

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// maxCachedTokens bounds the tokens a Verifier remembers as verified; past
// it, an entry is dropped at random (Go's map order) for each one added.
const maxCachedTokens = 4096

// tokenCache remembers tokens already verified, by the SHA-256 of the
// whole token, as Envoy's jwt_authn does: a client sends one token for its
// whole life (an hour, typically), and verifying its signature again on
// every request costs tens of microseconds (RS256, ES256, EdDSA). An entry
// holds only while the key set it was verified with is the one held (a
// rotation or a reload drops every entry's use) and while the token's
// exp and nbf, with the leeway, still admit it; iss and aud do not change.
type tokenCache struct {
	mu      sync.RWMutex
	entries map[[sha256.Size]byte]cachedToken
}

type cachedToken struct {
	set      *keySet // the keys it was verified with
	exp, nbf time.Time
	claims   jwt.MapClaims // read-only once cached
}

// get returns the claims of a token verified with set, still valid at
// now.
func (c *tokenCache) get(sum [sha256.Size]byte, set *keySet, now time.Time, leeway time.Duration) (jwt.MapClaims, bool) {
	c.mu.RLock()
	e, ok := c.entries[sum]
	c.mu.RUnlock()
	if !ok || e.set != set || !now.Before(e.exp.Add(leeway)) || now.Add(leeway).Before(e.nbf) {
		return nil, false
	}
	return e.claims, true
}

// put remembers a token verified with set.
func (c *tokenCache) put(sum [sha256.Size]byte, set *keySet, claims jwt.MapClaims) {
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil || set == nil {
		return
	}
	e := cachedToken{set: set, exp: exp.Time, claims: claims}
	if nbf, err := claims.GetNotBefore(); err == nil && nbf != nil {
		e.nbf = nbf.Time
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[[sha256.Size]byte]cachedToken{}
	}
	if len(c.entries) >= maxCachedTokens {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[sum] = e
}
