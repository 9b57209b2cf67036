package jwtauth

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// BenchmarkVerify measures one token's verification, its key cached: the
// first time (the signature checked: the token cache emptied before each)
// and again (from the token cache), for each algorithm.
//
//	go test -run XXX -bench Verify -benchmem ./jwtauth
func BenchmarkVerify(b *testing.B) {
	dir := b.TempDir()
	keys := []*testsupport.IdPKey{testsupport.NewIdPKey(b, "RS256", "rs"), testsupport.NewIdPKey(b, "ES256", "es"), testsupport.NewIdPKey(b, "EdDSA", "ed")}
	secret := []byte("0123456789abcdef0123456789abcdef")
	c := DefaultConfig()
	c.KeysFile, c.SecretFile = filepath.Join(dir, "jwks.json"), filepath.Join(dir, "secret")
	if err := os.WriteFile(c.KeysFile, testsupport.JWKS(keys...), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(c.SecretFile, secret, 0o600); err != nil {
		b.Fatal(err)
	}
	v, err := New(c)
	if err != nil {
		b.Fatal(err)
	}
	claims := map[string]any{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()}
	tokens := map[string]string{"HS256": testsupport.SignHS256(b, secret, claims, nil)}
	for _, k := range keys {
		tokens[k.Alg] = k.Sign(b, claims)
	}
	for _, alg := range []string{"RS256", "ES256", "EdDSA", "HS256"} {
		for _, cached := range []bool{false, true} {
			name := alg + "/signature"
			if cached {
				name = alg + "/cached"
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					if !cached {
						v.tokens = tokenCache{}
					}
					if _, err := v.Verify(context.Background(), tokens[alg]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
