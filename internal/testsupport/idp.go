package testsupport

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// IdP is an identity provider for the tests of bearer JWTs: signing keys
// made on the spot, and a JWKS endpoint on a loopback port serving the
// public halves of the keys it is told to, so a test can rotate them, or
// answer as a broken one does (huge, slow, malformed, an error status).
type IdP struct {
	URL     string       // the JWKS endpoint
	Fetches atomic.Int64 // requests it has had

	mu   sync.Mutex
	keys []*IdPKey
	mode JWKSMode
	stop chan struct{} // closed when the test ends: a slow answer ends then
}

// JWKSMode is how the endpoint answers.
type JWKSMode int

const (
	JWKSGood      JWKSMode = iota // the keys' JWKS
	JWKSHuge                      // the keys' JWKS, over 2 MiB
	JWKSSlow                      // nothing until the client gives up or the test ends
	JWKSMalformed                 // not JSON
	JWKSError                     // 503, its body the keys' JWKS: a client that read it whatever the status would take them
)

// IdPKey is one signing key: RS256 (RSA 2048), ES256 (P-256) or EdDSA
// (Ed25519), under its kid.
type IdPKey struct {
	Kid, Alg string
	Signer   crypto.Signer
}

// NewIdPKey makes a key for alg.
func NewIdPKey(t TB, alg, kid string) *IdPKey {
	t.Helper()
	var s crypto.Signer
	var err error
	switch alg {
	case "RS256":
		s, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		s, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "EdDSA":
		_, s, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatal("NewIdPKey: no such algorithm " + alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &IdPKey{Kid: kid, Alg: alg, Signer: s}
}

// StartIdP serves a JWKS of keys until the test ends.
func StartIdP(t TB, keys ...*IdPKey) *IdP {
	t.Helper()
	p := &IdP{keys: keys, stop: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.URL = "http://" + ln.Addr().String() + "/.well-known/jwks.json"
	srv := &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		close(p.stop)
		srv.Close()
	})
	return p
}

// Serve makes the endpoint serve exactly keys from now on (a rotation).
func (p *IdP) Serve(keys ...*IdPKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = keys
}

// SetMode makes the endpoint answer as m says from now on.
func (p *IdP) SetMode(m JWKSMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
}

func (p *IdP) serve(w http.ResponseWriter, r *http.Request) {
	p.Fetches.Add(1)
	p.mu.Lock()
	keys, mode := p.keys, p.mode
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/jwk-set+json")
	switch mode {
	case JWKSHuge:
		// The keys' JWKS, good but for 2 MiB of a member nobody reads.
		w.Write([]byte(`{"padding":"`))
		pad := []byte(strings.Repeat("A", 64<<10))
		for range (2 << 20) / len(pad) {
			if _, err := w.Write(pad); err != nil {
				return
			}
		}
		w.Write([]byte(`",` + string(JWKS(keys...)[1:])))
	case JWKSSlow:
		select {
		case <-r.Context().Done():
		case <-p.stop:
		}
	case JWKSMalformed:
		w.Write([]byte(`{"keys": [{"kty":"RSA","kid":"k1","n":`))
	case JWKSError:
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write(JWKS(keys...))
	default:
		w.Write(JWKS(keys...))
	}
}

// JWKS is the JWK Set of the keys' public halves.
func JWKS(keys ...*IdPKey) []byte {
	set := struct {
		Keys []map[string]string `json:"keys"`
	}{Keys: []map[string]string{}}
	for _, k := range keys {
		set.Keys = append(set.Keys, k.JWK())
	}
	b, _ := json.Marshal(set)
	return b
}

// JWK is the key's public half as a JSON Web Key.
func (k *IdPKey) JWK() map[string]string {
	b64 := base64.RawURLEncoding.EncodeToString
	m := map[string]string{"kid": k.Kid, "alg": k.Alg, "use": "sig"}
	switch pub := k.Signer.Public().(type) {
	case *rsa.PublicKey:
		m["kty"], m["n"], m["e"] = "RSA", b64(pub.N.Bytes()), b64(big.NewInt(int64(pub.E)).Bytes())
	case *ecdsa.PublicKey:
		b, _ := pub.Bytes() // 0x04 || x || y
		m["kty"], m["crv"], m["x"], m["y"] = "EC", "P-256", b64(b[1:33]), b64(b[33:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", b64(pub)
	}
	return m
}

// Sign signs claims with the key, its kid in the header, and the header
// members of extra (crit, another kid) after it.
func (k *IdPKey) Sign(t TB, claims map[string]any, extra ...map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(k.Alg), jwt.MapClaims(claims))
	tok.Header["kid"] = k.Kid
	for _, e := range extra {
		for name, v := range e {
			tok.Header[name] = v
		}
	}
	s, err := tok.SignedString(k.Signer)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// SignHS256 signs claims with a shared secret; header members in extra
// (a kid) are added to the header.
func SignHS256(t TB, secret []byte, claims map[string]any, extra map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(claims))
	for k, v := range extra {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Unsigned is a token with the given header and claims and no signature
// (alg none, or a header a signer would not write).
func Unsigned(header, claims map[string]any) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c) + "."
}
