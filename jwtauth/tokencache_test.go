package jwtauth

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestTokenCache: a token verified once is answered from the cache while
// the keys it was verified with are held and its exp (with the leeway)
// admits it; past its exp, or once its key is rotated out, it is refused
// like any other. The cache is bounded.
func TestTokenCache(t *testing.T) {
	a, b := testsupport.NewIdPKey(t, "ES256", "a"), testsupport.NewIdPKey(t, "EdDSA", "b")
	v := fileVerifier(t, a)
	t0 := time.Now()
	v.now = func() time.Time { return t0 }
	claims := map[string]any{"sub": "alice", "iss": "https://idp.test/", "aud": "payments", "exp": t0.Add(time.Hour).Unix()}
	tok := a.Sign(t, claims)
	for i := range 2 {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			t.Fatalf("verify %d: %v", i, err)
		}
	}
	if n := len(v.tokens.entries); n != 1 {
		t.Fatalf("%d tokens cached, want 1", n)
	}
	// Within the leeway past exp: still good; beyond it: refused, cached
	// or not.
	v.now = func() time.Time { return t0.Add(time.Hour + 20*time.Second) }
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Errorf("20s past exp (leeway 30s): %v", err)
	}
	v.now = func() time.Time { return t0.Add(time.Hour + time.Minute) }
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, ErrInvalid) {
		t.Errorf("a minute past exp: err = %v, want ErrInvalid", err)
	}
	// The key rotated out of the file: the cached token is verified again,
	// and refused.
	v.now = func() time.Time { return t0 }
	if err := os.WriteFile(v.cfg.KeysFile, testsupport.JWKS(b), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := v.Load(); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, ErrInvalid) {
		t.Errorf("its key rotated out: err = %v, want ErrInvalid", err)
	}
	for i := range maxCachedTokens + 10 {
		claims["jti"] = i
		if _, err := v.Verify(context.Background(), b.Sign(t, claims)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(v.tokens.entries); n > maxCachedTokens {
		t.Errorf("%d tokens cached, want at most %d", n, maxCachedTokens)
	}
}
