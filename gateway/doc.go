// Package gateway holds idemgate's HTTP faces, both on fasthttp: the client
// listener (routes, idempotency keys, replay, form tokens, proxying to the
// upstream) and the API listener (tokens, KV, records, cluster, health,
// metrics), which may require bearer tokens by role (auth.go).
//
// It is the only package that turns errors into HTTP answers: every error
// is an RFC 9457 problem document, "no quorum" is 503 with Retry-After,
// never a 500. Nothing from a fasthttp.RequestCtx is kept after a handler
// returns; bytes that go into a Raft command or cross a goroutine are copied.
package gateway
