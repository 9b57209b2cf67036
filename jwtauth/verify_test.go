package jwtauth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// fileVerifier is a Verifier of keys from a JWKS file, iss and aud
// required.
func fileVerifier(t *testing.T, keys ...*testsupport.IdPKey) *Verifier {
	t.Helper()
	p := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(p, testsupport.JWKS(keys...), 0o600); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.KeysFile, c.Issuer, c.Audiences = p, "https://idp.test/", []string{"payments", "billing"}
	v, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestVerifyClaims: exp and nbf with the 30 s leeway (minutes away from
// its edge either way, so the machine's pace cannot matter), iss exact,
// aud one of the configured ones, as a string or in an array.
func TestVerifyClaims(t *testing.T) {
	key := testsupport.NewIdPKey(t, "EdDSA", "k")
	v := fileVerifier(t, key)
	now := time.Now()
	base := func(edit map[string]any) map[string]any {
		c := map[string]any{"sub": "alice", "iss": "https://idp.test/", "aud": "payments", "exp": now.Add(time.Hour).Unix()}
		for k, x := range edit {
			if x == nil {
				delete(c, k)
				continue
			}
			c[k] = x
		}
		return c
	}
	tests := []struct {
		name string
		edit map[string]any
		ok   bool
	}{
		{"valid", nil, true},
		{"expired 10s ago, within the leeway", map[string]any{"exp": now.Add(-10 * time.Second).Unix()}, true},
		{"expired 5m ago", map[string]any{"exp": now.Add(-5 * time.Minute).Unix()}, false},
		{"valid from 10s on, within the leeway", map[string]any{"nbf": now.Add(10 * time.Second).Unix()}, true},
		{"valid from 5m on", map[string]any{"nbf": now.Add(5 * time.Minute).Unix()}, false},
		{"aud in an array", map[string]any{"aud": []string{"other", "billing"}}, true},
		{"aud another", map[string]any{"aud": []string{"other"}}, false},
		{"no aud", map[string]any{"aud": nil}, false},
		{"iss with another trailing slash", map[string]any{"iss": "https://idp.test"}, false},
		{"nbf a string", map[string]any{"nbf": "now"}, false},
	}
	for _, tt := range tests {
		tok, err := v.Verify(context.Background(), key.Sign(t, base(tt.edit)))
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("%s: err = %v, want ok %v", tt.name, err, tt.ok)
			continue
		}
		if err == nil {
			if sub, err := tok.String("sub"); sub != "alice" || err != nil {
				t.Errorf("%s: sub = %q, %v", tt.name, sub, err)
			}
		}
	}
}

// TestNewFiles: New reads the key and secret files, and names the one it
// could not use.
func TestNewFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		name         string
		keys, secret string
		want         error
	}{
		{"a malformed keys file", write("bad.json", `{"keys":`), "", ErrKeysFile},
		{"no keys file", filepath.Join(dir, "none.json"), "", ErrKeysFile},
		{"a short secret", "", write("short", "short\n"), ErrSecretFile},
		{"a secret of 32 bytes", "", write("ok", "0123456789abcdef0123456789abcdef\n"), nil},
	} {
		c := DefaultConfig()
		c.KeysFile, c.SecretFile = tt.keys, tt.secret
		_, err := New(c)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%s: New = %v, want %v", tt.name, err, tt.want)
		}
	}
}
