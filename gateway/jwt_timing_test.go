package gateway

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// BenchmarkJWT measures what a bearer JWT costs a request, in one run and
// in process (Handle on a request in memory: no network, no Raft): the
// replay of a completed key on a route without a token (the baseline),
// beside the same replay on a route whose tenant is the sub of a token
// signed RS256 (2048 bits), ES256, EdDSA or HS256, its key cached, and the
// token too (a client sends one token many times); and that verification
// alone. jwtauth's BenchmarkVerify has a token's first verification.
//
//	go test -run XXX -bench JWT -benchmem ./gateway
func BenchmarkJWT(b *testing.B) {
	dir := b.TempDir()
	rs, es, ed := testsupport.NewIdPKey(b, "RS256", "rs"), testsupport.NewIdPKey(b, "ES256", "es"), testsupport.NewIdPKey(b, "EdDSA", "ed")
	secret := []byte("0123456789abcdef0123456789abcdef")
	keysFile, secretFile := filepath.Join(dir, "jwks.json"), filepath.Join(dir, "secret")
	if err := os.WriteFile(keysFile, testsupport.JWKS(rs, es, ed), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(secretFile, secret, 0o600); err != nil {
		b.Fatal(err)
	}
	c := jwtConfig("")
	c.JWKSURL, c.KeysFile, c.SecretFile = "", keysFile, secretFile
	addr, gc := startJWTGateway(b, c)
	g := gc.gws[0]
	v := g.cfg.JWT
	alice := claims("alice")
	cases := []struct{ name, path, token string }{
		{"none", "/open", ""},
		{"RS256", "/pay", rs.Sign(b, alice)},
		{"ES256", "/pay", es.Sign(b, alice)},
		{"EdDSA", "/pay", ed.Sign(b, alice)},
		{"HS256", "/pay", testsupport.SignHS256(b, secret, alice, nil)},
	}
	for _, tc := range cases {
		// The first request over the network makes the record; the
		// replays are Handle's alone.
		hdr := "Idempotency-Key: bench-" + tc.name + "\r\n"
		if tc.token != "" {
			hdr += "Authorization: Bearer " + tc.token + "\r\n"
		}
		if status, _, body := testsupport.RawExchange(b, addr, post(tc.path, hdr, `{"amount":100,"currency":"eur"}`), 0); status != 201 {
			b.Fatalf("%s: first = %d %s", tc.name, status, body)
		}
		var req fasthttp.Request
		req.Header.SetMethod("POST")
		req.SetRequestURI(tc.path)
		req.Header.Set("Idempotency-Key", "bench-"+tc.name)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		req.SetBodyString(`{"amount":100,"currency":"eur"}`)
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil)
		b.Run("replay/"+tc.name, func(b *testing.B) {
			for b.Loop() {
				ctx.Response.Reset()
				g.Handle(&ctx)
			}
			if ctx.Response.StatusCode() != 201 || string(ctx.Response.Header.Peek("Idempotent-Replayed")) != "true" {
				b.Fatalf("replay = %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
		})
		if tc.token == "" {
			continue
		}
		b.Run("verify/"+tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := v.Verify(context.Background(), tc.token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
