package jwtauth

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestParseJWKS: key sets as identity providers write them are read; keys
// this package cannot use are left out (and said); sets that are not one,
// or that name a kid twice, are refused.
func TestParseJWKS(t *testing.T) {
	rs, es, ed := testsupport.NewIdPKey(t, "RS256", "r"), testsupport.NewIdPKey(t, "ES256", "e"), testsupport.NewIdPKey(t, "EdDSA", "d")
	b64 := base64.RawURLEncoding.EncodeToString
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	weakJWK := `{"kty":"RSA","kid":"weak","n":"` + b64(weak.N.Bytes()) + `","e":"AQAB"}`
	good := string(testsupport.JWKS(rs, es, ed))
	rsJWK := rs.JWK()
	evenE := `{"kty":"RSA","kid":"even","n":"` + rsJWK["n"] + `","e":"` + b64(big.NewInt(65536).Bytes()) + `"}`
	ecJWK := es.JWK()
	offCurve := `{"kty":"EC","kid":"off","crv":"P-256","x":"` + ecJWK["x"] + `","y":"` + ecJWK["x"] + `"}`
	inner := strings.TrimSuffix(strings.TrimPrefix(good, `{"keys":[`), "]}")
	tests := []struct {
		name    string
		data    string
		keys    int
		skipped int
		bad     bool
	}{
		{"three keys", good, 3, 0, false},
		{"an encryption key beside", `{"keys":[` + inner + `,{"kty":"RSA","use":"enc","kid":"x","n":"` + rsJWK["n"] + `","e":"AQAB"}]}`, 3, 1, false},
		{"a symmetric key beside", `{"keys":[` + inner + `,{"kty":"oct","kid":"s","k":"AAAA"}]}`, 3, 1, false},
		{"a 1024-bit RSA key beside", `{"keys":[` + inner + `,` + weakJWK + `]}`, 3, 1, false},
		{"an even exponent beside", `{"keys":[` + inner + `,` + evenE + `]}`, 3, 1, false},
		{"a point off the curve beside", `{"keys":[` + inner + `,` + offCurve + `]}`, 3, 1, false},
		{"P-384 beside", `{"keys":[` + inner + `,{"kty":"EC","kid":"p384","crv":"P-384","x":"AA","y":"AA"}]}`, 3, 1, false},
		{"an RSA key that says ES256", `{"keys":[` + inner + `,{"kty":"RSA","alg":"ES256","kid":"z","n":"` + rsJWK["n"] + `","e":"AQAB"}]}`, 3, 1, false},
		{"bad base64 beside", `{"keys":[` + inner + `,{"kty":"OKP","crv":"Ed25519","kid":"b","x":"!!"}]}`, 3, 1, false},
		{"a key that is not an object beside", `{"keys":[` + inner + `,7]}`, 3, 1, false},
		{"not JSON", `{"keys": [`, 0, 0, true},
		{"keys not an array", `{"keys": "k"}`, 0, 0, true},
		{"no keys member", `{}`, 0, 0, true},
		{"null", `null`, 0, 0, true},
		{"no usable key", `{"keys":[` + weakJWK + `]}`, 0, 0, true},
		{"an empty set", `{"keys":[]}`, 0, 0, true},
		{"a kid twice", `{"keys":[` + inner + `,` + inner + `]}`, 0, 0, true},
		{"too many keys", `{"keys":[` + strings.Repeat(`{"kty":"oct"},`, maxKeys) + `{"kty":"oct"}]}`, 0, 0, true},
	}
	for _, tt := range tests {
		keys, skipped, err := parseJWKS([]byte(tt.data))
		switch {
		case tt.bad && !errors.Is(err, errBadJWKS):
			t.Errorf("%s: err = %v, want errBadJWKS", tt.name, err)
		case !tt.bad && (err != nil || len(keys) != tt.keys || len(skipped) != tt.skipped):
			t.Errorf("%s: %d keys, skipped %q, err %v; want %d keys, %d skipped", tt.name, len(keys), skipped, err, tt.keys, tt.skipped)
		}
	}
}

// TestBearer: the token is taken out of one Authorization header, Bearer
// in any case; anything else is missing (another scheme, none) or invalid.
func TestBearer(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		token  string
		err    error
	}{
		{"bearer", []string{"Bearer a.b.c"}, "a.b.c", nil},
		{"lower case, spaces", []string{"  bearer   a.b-_c  "}, "a.b-_c", nil},
		{"none", nil, "", ErrMissing},
		{"basic", []string{"Basic YTpi"}, "", ErrMissing},
		{"scheme only", []string{"Bearer"}, "", ErrInvalid},
		{"two", []string{"Bearer a.b.c", "Bearer a.b.c"}, "", ErrInvalid},
		{"a quote", []string{`Bearer a"b.c`}, "", ErrInvalid},
		{"a tab inside", []string{"Bearer a.b\t.c"}, "", ErrInvalid},
		{"base64 padding", []string{"Bearer a.b.c=="}, "", ErrInvalid},
		{"too long", []string{"Bearer " + strings.Repeat("a", MaxTokenLen+1)}, "", ErrInvalid},
	}
	for _, tt := range tests {
		var vals [][]byte
		for _, v := range tt.values {
			vals = append(vals, []byte(v))
		}
		tok, err := Bearer(vals)
		if tok != tt.token || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("%s: Bearer = %q, %v; want %q, %v", tt.name, tok, err, tt.token, tt.err)
		}
	}
}

// TestDescription: what goes back in error_description is printable ASCII
// without quotes or backslashes, and bounded.
func TestDescription(t *testing.T) {
	got := Description(errors.Join(ErrInvalid, errors.New(`no key with kid "a\b"`+"\x00\xff"+strings.Repeat("x", 300))))
	if strings.ContainsAny(got, "\"\\\x00\xff") || len(got) > 200 {
		t.Errorf("Description = %q", got)
	}
}

// FuzzParseJWKS: no key set, however hostile, panics the parser, and a set
// it accepts holds only keys it can verify with.
func FuzzParseJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"},{"kty":"EC","crv":"P-256","x":"","y":""}]}`))
	f.Add([]byte(`{"keys":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, _, err := parseJWKS(data)
		if err != nil {
			return
		}
		for kid, k := range keys {
			if !fits(k.alg, k.key) {
				t.Fatalf("kid %q: a %T for %s", kid, k.key, k.alg)
			}
		}
	})
}
