// Package jwtauth verifies bearer JSON Web Tokens (RFC 7519) for the
// gateway: the signature (RS256, ES256, EdDSA with keys from a JWKS, RFC
// 7517, served at a URL or kept in a file; HS256 with a shared secret from
// a file), the algorithm against an allow list, and exp, nbf, iss and aud
// with a small leeway. It hands back the token's claims; the gateway
// decides what a route needs of them (a tenant from one claim).
//
// Keys are cached. A token whose kid the cache lacks makes the Verifier
// load its keys again, at most once per Config.MinRefetch, and a request
// waits for that load at most Config.FetchTimeout: a slow or dead key
// server costs a request a bounded wait, never a stalled handler. A JWKS
// larger than Config.MaxKeysBytes is refused, and a load that fails keeps
// the keys already held. Key and secret files are looked at again once a
// second and reread when they change, so keys rotate without a restart.
//
// A token verified once is remembered, by its SHA-256, while the keys it
// was verified with are held and its exp admits it (4,096 at most): a
// client sends one token many times, and its signature is checked once.
//
// The signatures and claims are golang-jwt/jwt/v5's; fetching and reading
// the JWKS, and the JWK to public key conversion, are this package's (the
// JWKS helpers for jwt/v5 wait on their refetch limiter inside the
// request, and read a response whole).
package jwtauth
