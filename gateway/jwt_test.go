package gateway

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/jwtauth"
)

// jwtRoutes are the routes of the JWT tests: a tenant from the token's
// sub, a route that only requires a token, and one that needs none. The
// jwt section is only there for the file to be valid: the tests build the
// Verifier themselves, against their own identity provider.
const jwtRoutes = `nodes:
  - {id: n1, raft: "127.0.0.1:1", api: "127.0.0.1:2", listen: "127.0.0.1:3"}
upstream: http://127.0.0.1:4
jwt: {jwks_url: "http://127.0.0.1:9/jwks.json"}
routes:
  - {name: pay, path: /pay, tenant: "jwt:sub"}
  - {name: authed, path: /authed, auth: jwt, require_key: false}
  - {name: open, path: /open}
`

const (
	testIssuer   = "https://idp.test/"
	testAudience = "payments"
)

// jwtConfig is the Verifier of the tests: iss and aud required, loads of
// the JWKS bounded by 300 ms.
func jwtConfig(url string) jwtauth.Config {
	c := jwtauth.DefaultConfig()
	c.JWKSURL, c.Issuer, c.Audiences = url, testIssuer, []string{testAudience}
	c.FetchTimeout = 300 * time.Millisecond
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return c
}

// startJWTGateway starts a gateway with the JWT routes and a Verifier of
// c, its keys loaded (or not: a JWKS that fails), over a store of its own.
func startJWTGateway(t testing.TB, c jwtauth.Config, tweak ...func(*Config)) (addr string, gc *gwCluster) {
	t.Helper()
	v, err := jwtauth.New(c)
	if err != nil {
		t.Fatal(err)
	}
	v.Load() // a failure is the test's case
	file, err := config.Parse([]byte(jwtRoutes))
	if err != nil {
		t.Fatal(err)
	}
	gc = startGatewaysOver(t, nil, []nodeStore{memstore.New(t)}, "", append([]func(*Config){func(cfg *Config) {
		cfg.Routes, cfg.JWT = file.Routes, v
	}}, tweak...)...)
	return addrOf(gc.gwURLs[0]), gc
}

// claims are valid claims for sub; each edit changes them.
func claims(sub any, edits ...func(map[string]any)) map[string]any {
	now := time.Now()
	c := map[string]any{"sub": sub, "iss": testIssuer, "aud": testAudience, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	if sub == nil {
		delete(c, "sub")
	}
	for _, e := range edits {
		e(c)
	}
	return c
}

func set(name string, v any) func(map[string]any) { return func(c map[string]any) { c[name] = v } }
func unset(name string) func(map[string]any)      { return func(c map[string]any) { delete(c, name) } }

// withBearer is a POST to path with a key and Authorization: Bearer token.
func withBearer(path, key, token string) string {
	return post(path, "Idempotency-Key: "+key+"\r\nAuthorization: Bearer "+token+"\r\n", `{"amount":100}`)
}

// jwtCase is a request and the exact answer it must get: status, problem
// type, and the WWW-Authenticate challenge's error ("" for a bare one;
// "-" for no challenge).
type jwtCase struct {
	name, raw        string
	status           int
	ptype, challenge string
}

// check sends each case and holds the answer to it; none may reach the
// upstream.
func checkJWTCases(t *testing.T, addr string, up *testsupport.Upstream, cases []jwtCase) {
	t.Helper()
	calls := up.Calls.Load()
	for _, tt := range cases {
		r, ok := testsupport.RawReply(t, addr, tt.raw, 0)
		if !ok {
			t.Errorf("%s: no answer", tt.name)
			continue
		}
		ptype := ""
		if r.Status >= 400 {
			ptype = r.ProblemType(t)
		}
		www := r.Header.Get("WWW-Authenticate")
		var challenge string
		switch {
		case www == "":
			challenge = "-"
		case www == bearerRealm:
			challenge = ""
		case strings.HasPrefix(www, bearerRealm+`, error="invalid_token", error_description="`) && strings.HasSuffix(www, `"`):
			challenge = "invalid_token"
		default:
			challenge = "malformed: " + www
		}
		if r.Status != tt.status || ptype != tt.ptype || challenge != tt.challenge {
			t.Errorf("%s: got %d %q challenge %q (%s), want %d %q challenge %q", tt.name, r.Status, ptype, www, r.Body, tt.status, tt.ptype, tt.challenge)
		}
	}
	if n := up.Calls.Load(); n != calls {
		t.Errorf("refused requests reached the upstream %d times", n-calls)
	}
}

// TestJWTHostile: tokens a gateway must refuse, each with its exact answer
// (401 and an RFC 6750 challenge, 400 for a Connection header that would
// strip the token, 431 for a header block over the listener's limit; a
// 1 MB token under a limit raised for it is 401 before it is decoded),
// and none reaches the upstream. The keys are generated here and served from
// a JWKS endpoint on loopback.
func TestJWTHostile(t *testing.T) {
	t.Parallel()
	rs, es, ed := newKeys(t)
	idp := testsupport.StartIdP(t, rs, es, ed)
	addr, gc := startJWTGateway(t, jwtConfig(idp.URL))
	// A gateway whose header limit lets a 1 MB token through to the
	// verifier.
	bigAddr, bigGC := startJWTGateway(t, jwtConfig(idp.URL), func(c *Config) { c.MaxHeaderBytes = 2 << 20 })
	alice := claims("alice")
	der, err := x509.MarshalPKIXPublicKey(rs.Signer.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	good := rs.Sign(t, alice)
	parts := strings.Split(good, ".")
	bob, _ := json.Marshal(claims("bob"))
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(bob) + "." + parts[2]
	stranger := testsupport.NewIdPKey(t, "RS256", rs.Kid) // the known kid, another key
	huge := strings.Repeat("A", 1<<20)
	const ii, br, iBR = "invalid_token", "", "invalid-bearer-token"
	checkJWTCases(t, addr, gc.up, []jwtCase{
		{"no Authorization", post("/pay", "Idempotency-Key: k1\r\n", "{}"), 401, "bearer-required", br},
		{"Basic credentials", post("/pay", "Idempotency-Key: k1\r\nAuthorization: Basic YWxpY2U6eA==\r\n", "{}"), 401, "bearer-required", br},
		{"no key either: the token is checked first", post("/pay", "", "{}"), 401, "bearer-required", br},
		{"alg none", withBearer("/pay", "k1", testsupport.Unsigned(map[string]any{"alg": "none", "typ": "JWT"}, alice)), 401, iBR, ii},
		{"alg none, kid of a real key", withBearer("/pay", "k1", testsupport.Unsigned(map[string]any{"alg": "none", "kid": rs.Kid}, alice)), 401, iBR, ii},
		{"RS256 to HS256: the public key (PEM) as the secret", withBearer("/pay", "k1", testsupport.SignHS256(t, pubPEM, alice, map[string]any{"kid": rs.Kid})), 401, iBR, ii},
		{"RS256 to HS256: the public key (DER) as the secret", withBearer("/pay", "k1", testsupport.SignHS256(t, der, alice, map[string]any{"kid": rs.Kid})), 401, iBR, ii},
		{"expired", withBearer("/pay", "k1", rs.Sign(t, claims("alice", set("exp", time.Now().Add(-time.Hour).Unix())))), 401, iBR, ii},
		{"not yet valid", withBearer("/pay", "k1", rs.Sign(t, claims("alice", set("nbf", time.Now().Add(time.Hour).Unix())))), 401, iBR, ii},
		{"no exp", withBearer("/pay", "k1", rs.Sign(t, claims("alice", unset("exp")))), 401, iBR, ii},
		{"wrong iss", withBearer("/pay", "k1", rs.Sign(t, claims("alice", set("iss", "https://evil.test/")))), 401, iBR, ii},
		{"no iss", withBearer("/pay", "k1", rs.Sign(t, claims("alice", unset("iss")))), 401, iBR, ii},
		{"wrong aud", withBearer("/pay", "k1", rs.Sign(t, claims("alice", set("aud", "billing")))), 401, iBR, ii},
		{"exp of the wrong type", withBearer("/pay", "k1", rs.Sign(t, claims("alice", set("exp", "tomorrow")))), 401, iBR, ii},
		{"sub of the wrong type", withBearer("/pay", "k1", rs.Sign(t, claims(12345))), 401, iBR, ii},
		{"sub an object", withBearer("/pay", "k1", rs.Sign(t, claims(map[string]any{"id": "alice"}))), 401, iBR, ii},
		{"no sub", withBearer("/pay", "k1", rs.Sign(t, claims(nil))), 401, iBR, ii},
		{"sub empty", withBearer("/pay", "k1", rs.Sign(t, claims(""))), 401, iBR, ii},
		{"sub with a NUL", withBearer("/pay", "k1", rs.Sign(t, claims("alice\x00bob"))), 401, iBR, ii},
		{"claims changed after signing", withBearer("/pay", "k1", tampered), 401, iBR, ii},
		{"the known kid, another key", withBearer("/pay", "k1", stranger.Sign(t, alice)), 401, iBR, ii},
		{"ES256 under the RSA key's kid", withBearer("/pay", "k1", es.Sign(t, alice, map[string]any{"kid": rs.Kid})), 401, iBR, ii},
		{"kid not a string", withBearer("/pay", "k1", rs.Sign(t, alice, map[string]any{"kid": 7})), 401, iBR, ii},
		{"crit header", withBearer("/pay", "k1", rs.Sign(t, alice, map[string]any{"crit": []string{"exp"}})), 401, iBR, ii},
		{"not a JWT", withBearer("/pay", "k1", "abc"), 401, iBR, ii},
		{"quotes in the token", withBearer("/pay", "k1", `a"b.c.d`), 401, iBR, ii},
		{"empty bearer", post("/pay", "Idempotency-Key: k1\r\nAuthorization: Bearer \r\n", "{}"), 401, iBR, ii},
		{"two Authorization headers", post("/pay", "Idempotency-Key: k1\r\nAuthorization: Bearer "+good+"\r\nAuthorization: Bearer "+good+"\r\n", "{}"), 401, iBR, ii},
		{"Connection names Authorization", post("/pay", "Idempotency-Key: k1\r\nAuthorization: Bearer "+good+"\r\nConnection: Authorization\r\n", "{}"), 400, "bad-request", "-"},
		{"a route that only requires a token", post("/authed", "", "{}"), 401, "bearer-required", br},
		{"a 20 KB token, over the header limit", withBearer("/pay", "k1", huge[:20<<10]), 431, "bad-request", "-"},
	})
	checkJWTCases(t, bigAddr, bigGC.up, []jwtCase{
		{"a 1 MB token, under the header limit", withBearer("/pay", "k1", huge), 401, iBR, ii},
		{"a 1 MB token of three parts", withBearer("/pay", "k1", huge[:1<<19]+"."+huge[:1<<19]+".x"), 401, iBR, ii},
	})
	// The same requests with a good token are served, on every algorithm.
	for _, k := range []*testsupport.IdPKey{rs, es, ed} {
		r, _ := testsupport.RawReply(t, addr, withBearer("/pay", "good-"+k.Alg, k.Sign(t, alice)), 0)
		if r.Status != 201 {
			t.Errorf("%s token: %d %s, want 201", k.Alg, r.Status, r.Body)
		}
	}
	if r, _ := testsupport.RawReply(t, addr, post("/open", "Idempotency-Key: k1\r\n", "{}"), 0); r.Status != 201 {
		t.Errorf("a route without auth, no token: %d %s, want 201", r.Status, r.Body)
	}
}

// newKeys are an RS256, an ES256 and an EdDSA key.
func newKeys(t *testing.T) (rs, es, ed *testsupport.IdPKey) {
	return testsupport.NewIdPKey(t, "RS256", "rsa-1"), testsupport.NewIdPKey(t, "ES256", "ec-1"), testsupport.NewIdPKey(t, "EdDSA", "ed-1")
}

// TestJWTTenants: alice and bob send the same Idempotency-Key with the same
// body; each is charged once, and each retry replays the retrier's own
// answer, never the other's: the tenant is the verified sub. A token for
// bob cannot name alice's record, whatever else it sends.
func TestJWTTenants(t *testing.T) {
	t.Parallel()
	rs, es, _ := newKeys(t)
	idp := testsupport.StartIdP(t, rs, es)
	addr, gc := startJWTGateway(t, jwtConfig(idp.URL))
	alice, bob := rs.Sign(t, claims("alice")), es.Sign(t, claims("bob"))
	first := map[string]string{}
	for _, who := range []struct{ name, token string }{{"alice", alice}, {"bob", bob}} {
		status, _, body := testsupport.RawExchange(t, addr, withBearer("/pay", "order-1", who.token), 0)
		if status != 201 {
			t.Fatalf("%s's first request: %d %s", who.name, status, body)
		}
		first[who.name] = body
	}
	if first["alice"] == first["bob"] {
		t.Fatalf("alice and bob got one answer: %s", first["alice"])
	}
	// Retries, with fresh tokens of the same subjects.
	for i := range 3 {
		for _, who := range []struct{ name, token string }{
			{"alice", es.Sign(t, claims("alice", set("jti", i)))}, {"bob", rs.Sign(t, claims("bob", set("jti", i)))}} {
			r, _ := testsupport.RawReply(t, addr, withBearer("/pay", "order-1", who.token), 0)
			if r.Status != 201 || r.Body != first[who.name] || r.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("%s's retry %d: %d %s, want %s's own answer replayed", who.name, i, r.Status, r.Body, who.name)
			}
		}
	}
	if n := gc.up.Calls.Load(); n != 2 {
		t.Errorf("the upstream was called %d times, want 2 (one charge each)", n)
	}
	if n := gc.up.Executions("order-1"); n != 2 {
		t.Errorf("order-1 executed %d times, want 2", n)
	}
}

// TestJWTKeyRotation: the identity provider rotates its keys mid-test. A
// token of the new key is served after one load of the JWKS (its kid was
// unknown); the old key, gone from the JWKS, is refused; a made-up kid
// makes exactly one more load, then 401, and a second made-up kid within
// MinRefetch makes none. While the JWKS endpoint hangs, tokens of the
// keys held are served and an unknown kid is refused after FetchTimeout:
// nothing waits on the endpoint.
func TestJWTKeyRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := testsupport.NewIdPKey(t, "RS256", "2026-11"), testsupport.NewIdPKey(t, "ES256", "2026-12")
	idp := testsupport.StartIdP(t, oldKey)
	addr, gc := startJWTGateway(t, jwtConfig(idp.URL))
	expect := func(what, raw string, status int, fetches int64) {
		t.Helper()
		r, _ := testsupport.RawReply(t, addr, raw, 0)
		if r.Status != status {
			t.Errorf("%s: %d %s, want %d", what, r.Status, r.Body, status)
		}
		if n := idp.Fetches.Load(); n != fetches {
			t.Errorf("%s: the JWKS was fetched %d times in all, want %d", what, n, fetches)
		}
	}
	expect("the old key, held", withBearer("/pay", "r1", oldKey.Sign(t, claims("alice"))), 201, 1)
	idp.Serve(newKey)
	expect("the new key, after the rotation", withBearer("/pay", "r2", newKey.Sign(t, claims("alice"))), 201, 2)
	expect("the new key again: held", withBearer("/pay", "r3", newKey.Sign(t, claims("alice"))), 201, 2)
	expect("the old key, gone from the JWKS", withBearer("/pay", "r4", oldKey.Sign(t, claims("alice"))), 401, 2)

	// A made-up kid on a fresh gateway: one load, then 401; the next one
	// loads nothing.
	idp2 := testsupport.StartIdP(t, newKey)
	addr, _ = startJWTGateway(t, jwtConfig(idp2.URL))
	idp = idp2
	stranger := testsupport.NewIdPKey(t, "RS256", "no-such-kid")
	expect("an unknown kid", withBearer("/pay", "u1", stranger.Sign(t, claims("alice"))), 401, 2)
	expect("another unknown kid, within MinRefetch", withBearer("/pay", "u2", stranger.Sign(t, claims("alice"), map[string]any{"kid": "other"})), 401, 2)
	expect("the key held", withBearer("/pay", "u3", newKey.Sign(t, claims("alice"))), 201, 2)

	// A JWKS endpoint that hangs: the held key still serves; an unknown
	// kid waits for one bounded load, then 401.
	idp3 := testsupport.StartIdP(t, newKey)
	addr, _ = startJWTGateway(t, jwtConfig(idp3.URL))
	idp = idp3
	idp3.SetMode(testsupport.JWKSSlow)
	expect("the key held, the endpoint hanging", withBearer("/pay", "s1", newKey.Sign(t, claims("alice"))), 201, 1)
	expect("an unknown kid, the endpoint hanging", withBearer("/pay", "s2", stranger.Sign(t, claims("alice"))), 401, 2)
	if gc.up.Calls.Load() != 3 {
		t.Errorf("the first gateway's upstream was called %d times, want 3", gc.up.Calls.Load())
	}
}

// TestJWTKeysUnavailable: a JWKS endpoint that answers a JWKS too large,
// one that is malformed, one that never answers, or an error status, from
// the start: no key was ever loaded, so a token cannot be checked, and the
// request gets 503 (retry), after at most one bounded load of its own,
// never the upstream.
func TestJWTKeysUnavailable(t *testing.T) {
	t.Parallel()
	key := testsupport.NewIdPKey(t, "EdDSA", "ed-1")
	for _, tc := range []struct {
		name string
		mode testsupport.JWKSMode
	}{{"huge", testsupport.JWKSHuge}, {"malformed", testsupport.JWKSMalformed}, {"slow", testsupport.JWKSSlow}, {"error status", testsupport.JWKSError}} {
		idp := testsupport.StartIdP(t, key)
		idp.SetMode(tc.mode)
		addr, gc := startJWTGateway(t, jwtConfig(idp.URL))
		checkJWTCases(t, addr, gc.up, []jwtCase{
			{tc.name + " JWKS", withBearer("/pay", "k1", key.Sign(t, claims("alice"))), 503, "jwt-keys-unavailable", "-"},
			{tc.name + " JWKS, again within MinRefetch", withBearer("/pay", "k1", key.Sign(t, claims("alice"))), 503, "jwt-keys-unavailable", "-"},
			{tc.name + " JWKS, no token", post("/pay", "Idempotency-Key: k1\r\n", "{}"), 401, "bearer-required", ""},
		})
		if n := idp.Fetches.Load(); n != 2 {
			t.Errorf("%s: the JWKS was fetched %d times, want 2 (at start, and once for the first token)", tc.name, n)
		}
		// Fixed, and MinRefetch later, it serves: here a fresh gateway.
		idp.SetMode(testsupport.JWKSGood)
		addr, _ = startJWTGateway(t, jwtConfig(idp.URL))
		if status, _, body := testsupport.RawExchange(t, addr, withBearer("/pay", "k1", key.Sign(t, claims("alice"))), 0); status != 201 {
			t.Errorf("%s JWKS fixed: %d %s", tc.name, status, body)
		}
	}
}

// TestJWTKeysKept: keys are held, and the JWKS endpoint turns huge,
// malformed or answers an error status, with a rotated key in it (where
// its answer has keys at all). The bad answer is not taken and the keys
// held are kept: a fresh token of a held key (its signature checked, not
// remembered) is served before and after the failed load; a token of the
// rotated key makes the one refetch, then gets 401, and a second one
// within MinRefetch makes none. (An endpoint that hangs is
// TestJWTKeyRotation's.)
func TestJWTKeysKept(t *testing.T) {
	t.Parallel()
	held, rotated := testsupport.NewIdPKey(t, "EdDSA", "held"), testsupport.NewIdPKey(t, "ES256", "rotated")
	for _, mode := range []struct {
		name string
		mode testsupport.JWKSMode
	}{{"huge", testsupport.JWKSHuge}, {"malformed", testsupport.JWKSMalformed}, {"error status", testsupport.JWKSError}} {
		idp := testsupport.StartIdP(t, held)
		addr, gc := startJWTGateway(t, jwtConfig(idp.URL))
		n := 0
		expect := func(what string, key *testsupport.IdPKey, status int, ptype string, fetches int64) {
			t.Helper()
			n++
			raw := withBearer("/pay", fmt.Sprint("kept-", n), key.Sign(t, claims("alice", set("jti", n))))
			r, _ := testsupport.RawReply(t, addr, raw, 0)
			got := ""
			if r.Status != 201 {
				got = r.ProblemType(t)
			}
			if r.Status != status || got != ptype {
				t.Errorf("%s JWKS, %s: %d %q %s, want %d %q", mode.name, what, r.Status, got, r.Body, status, ptype)
			}
			if f := idp.Fetches.Load(); f != fetches {
				t.Errorf("%s JWKS, %s: the JWKS was fetched %d times in all, want %d", mode.name, what, f, fetches)
			}
		}
		expect("a held key", held, 201, "", 1)
		idp.Serve(rotated)
		idp.SetMode(mode.mode)
		expect("a held key, the endpoint gone bad", held, 201, "", 1)
		expect("the rotated key: one refetch", rotated, 401, "invalid-bearer-token", 2)
		expect("a held key after the failed refetch", held, 201, "", 2)
		expect("the rotated key again, within MinRefetch", rotated, 401, "invalid-bearer-token", 2)
		if c := gc.up.Calls.Load(); c != 3 {
			t.Errorf("%s JWKS: the upstream was called %d times, want 3 (the held key's)", mode.name, c)
		}
	}
}

// TestJWTFiles: keys from a JWKS file, rotated by rewriting the file (no
// restart), and HS256 with a secret from a file.
func TestJWTFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keysFile, secretFile := filepath.Join(dir, "jwks.json"), filepath.Join(dir, "hs256.secret")
	a, b := testsupport.NewIdPKey(t, "ES256", "a"), testsupport.NewIdPKey(t, "EdDSA", "b")
	secret := []byte("0123456789abcdef0123456789abcdef-shared")
	write := func(name string, data []byte, at time.Time) {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(name, at, at); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Now().Add(-time.Hour)
	write(keysFile, testsupport.JWKS(a), base)
	write(secretFile, append(secret, '\n'), base)
	c := jwtConfig("")
	c.JWKSURL, c.KeysFile, c.SecretFile = "", keysFile, secretFile
	addr, gc := startJWTGateway(t, c)
	checkJWTCases(t, addr, gc.up, []jwtCase{
		{"HS256 with another secret", withBearer("/pay", "f0", testsupport.SignHS256(t, []byte(strings.Repeat("x", 40)), claims("alice"), nil)), 401, "invalid-bearer-token", "invalid_token"},
	})
	for i, tok := range []string{a.Sign(t, claims("alice")), testsupport.SignHS256(t, secret, claims("alice"), nil)} {
		if status, _, body := testsupport.RawExchange(t, addr, withBearer("/pay", fmt.Sprint("f", i+1), tok), 0); status != 201 {
			t.Errorf("token %d: %d %s, want 201", i+1, status, body)
		}
	}
	write(keysFile, testsupport.JWKS(b), base.Add(time.Minute))
	if status, _, body := testsupport.RawExchange(t, addr, withBearer("/pay", "f3", b.Sign(t, claims("alice"))), 0); status != 201 {
		t.Errorf("the key written to the file: %d %s, want 201", status, body)
	}
}

// TestJWTRequireAll: with RequireJWT every request the gateway forwards
// needs a token, those no route takes too; its own endpoints do not.
func TestJWTRequireAll(t *testing.T) {
	t.Parallel()
	key := testsupport.NewIdPKey(t, "EdDSA", "ed-1")
	idp := testsupport.StartIdP(t, key)
	addr, gc := startJWTGateway(t, jwtConfig(idp.URL), func(c *Config) { c.RequireJWT = true })
	checkJWTCases(t, addr, gc.up, []jwtCase{
		{"no route, no token", post("/other", "", "{}"), 401, "bearer-required", ""},
		{"no route, expired token", post("/other", "Authorization: Bearer "+key.Sign(t, claims("a", set("exp", 1)))+"\r\n", "{}"), 401, "invalid-bearer-token", "invalid_token"},
		{"a route without auth, no token", post("/open", "Idempotency-Key: k1\r\n", "{}"), 401, "bearer-required", ""},
	})
	for _, raw := range []string{
		post("/other", "Authorization: Bearer "+key.Sign(t, claims("a"))+"\r\n", "{}"),
		withBearer("/open", "k1", key.Sign(t, claims("a"))),
		"GET /_idem/client.js HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		if status, _, body := testsupport.RawExchange(t, addr, raw, 0); status/100 != 2 {
			t.Errorf("%q: %d %s, want 2xx", strings.SplitN(raw, "\r\n", 2)[0], status, body)
		}
	}
}
