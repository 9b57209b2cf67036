package jwtauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
)

// The bounds of an RSA key: below 2048 bits a key is forgeable in
// practice (NIST SP 800-131A), above 8192 one verification costs
// milliseconds, which a hostile key set must not make every request pay.
const (
	minRSABits = 2048
	maxRSABits = 8192
)

// errBadJWKS: a key set that is not one (not JSON, no keys array, too
// many keys, two keys under one kid, no key this package can use).
var errBadJWKS = errors.New("malformed JWKS")

// publicKey is one verification key of a JWKS: what it verifies with, and
// the one algorithm it serves.
type publicKey struct {
	alg string
	key crypto.PublicKey
}

// jwk is a JSON Web Key as RFC 7517 and 7518 write one; only the members
// a public signature key has.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	Crv string `json:"crv"`
	N   string `json:"n"`
	E   string `json:"e"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// parseJWKS reads a JWK Set into keys by kid (a key without one under "").
// Keys it cannot use are left out and said in skipped: encryption keys,
// other curves and key types, RSA keys outside 2048-8192 bits, a key
// whose alg is not its type's. A set with none it can use, or with two
// usable keys under one kid, is refused: the set would not say which key
// a token names.
func parseJWKS(data []byte) (keys map[string]publicKey, skipped []string, err error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errBadJWKS, err)
	}
	switch {
	case set.Keys == nil:
		return nil, nil, fmt.Errorf("%w: no \"keys\" array", errBadJWKS)
	case len(set.Keys) > maxKeys:
		return nil, nil, fmt.Errorf("%w: %d keys, more than %d", errBadJWKS, len(set.Keys), maxKeys)
	}
	keys = map[string]publicKey{}
	for i, raw := range set.Keys {
		var k jwk
		if err := json.Unmarshal(raw, &k); err != nil {
			skipped = append(skipped, fmt.Sprintf("keys[%d]: %v", i, err))
			continue
		}
		pk, err := k.publicKey()
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("keys[%d] (kid %q): %v", i, k.Kid, err))
			continue
		}
		if _, dup := keys[k.Kid]; dup {
			return nil, nil, fmt.Errorf("%w: two keys with kid %q", errBadJWKS, k.Kid)
		}
		keys[k.Kid] = pk
	}
	if len(keys) == 0 {
		return nil, nil, fmt.Errorf("%w: no usable signature key (RSA 2048-8192 bits, EC P-256, Ed25519)", errBadJWKS)
	}
	return keys, skipped, nil
}

// publicKey converts k, checking that it is a signature key of a type,
// curve and size this package verifies with.
func (k jwk) publicKey() (publicKey, error) {
	if k.Use != "" && k.Use != "sig" {
		return publicKey{}, fmt.Errorf("use %q is not sig", k.Use)
	}
	var pk publicKey
	var err error
	switch k.Kty {
	case "RSA":
		pk.alg = "RS256"
		pk.key, err = k.rsa()
	case "EC":
		pk.alg = "ES256"
		pk.key, err = k.ec()
	case "OKP":
		pk.alg = "EdDSA"
		pk.key, err = k.ed25519()
	default:
		return publicKey{}, fmt.Errorf("key type %q is not RSA, EC or OKP", k.Kty)
	}
	if err != nil {
		return publicKey{}, err
	}
	if k.Alg != "" && k.Alg != pk.alg {
		return publicKey{}, fmt.Errorf("alg %q: this package verifies a %s key with %s only", k.Alg, k.Kty, pk.alg)
	}
	return pk, nil
}

func (k jwk) rsa() (*rsa.PublicKey, error) {
	n, err := b64(k.N, "n")
	if err != nil {
		return nil, err
	}
	e, err := b64(k.E, "e")
	if err != nil {
		return nil, err
	}
	if len(e) > 4 {
		return nil, errors.New("exponent e is over 32 bits")
	}
	exp := 0
	for _, b := range e {
		exp = exp<<8 | int(b)
	}
	if exp < 3 || exp%2 == 0 {
		return nil, fmt.Errorf("exponent e = %d: want an odd number of 3 or more", exp)
	}
	key := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}
	if bits := key.N.BitLen(); bits < minRSABits || bits > maxRSABits {
		return nil, fmt.Errorf("an RSA key of %d bits: want %d to %d", bits, minRSABits, maxRSABits)
	}
	return key, nil
}

func (k jwk) ec() (*ecdsa.PublicKey, error) {
	if k.Crv != "P-256" {
		return nil, fmt.Errorf("curve %q: ES256 is P-256", k.Crv)
	}
	x, err := b64(k.X, "x")
	if err != nil {
		return nil, err
	}
	y, err := b64(k.Y, "y")
	if err != nil {
		return nil, err
	}
	if len(x) != 32 || len(y) != 32 {
		return nil, errors.New("x and y must be 32 bytes each (P-256)")
	}
	// The uncompressed point, checked to be on the curve.
	return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
}

func (k jwk) ed25519() (ed25519.PublicKey, error) {
	if k.Crv != "Ed25519" {
		return nil, fmt.Errorf("curve %q: EdDSA is Ed25519 here", k.Crv)
	}
	x, err := b64(k.X, "x")
	if err != nil {
		return nil, err
	}
	if len(x) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("x is %d bytes, want %d", len(x), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(x), nil
}

// b64 decodes a member in base64url without padding (RFC 7518 2).
func b64(s, member string) ([]byte, error) {
	if s == "" {
		return nil, fmt.Errorf("member %s is missing", member)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("member %s: %v", member, err)
	}
	return b, nil
}
