// Package gateway is idemgate's proxy face on fasthttp: the client listener
// that matches routes, derives idempotency keys and fingerprints, claims a
// key's record, proxies the first request to the upstream, stores its answer
// and replays it to every retry (from a local cache when it can), checks
// form tokens and, on the routes that require them, bearer JWTs (with
// package jwtauth; jwt.go), and serves the browser helper client.js.
//
// It depends on the store and on form tokens only through its own small
// interfaces, Store and Tokens (store.go); the JSON API is
// package api, the shared HTTP plumbing internal/httpx. It never imports
// the API. Nothing from a fasthttp.RequestCtx is kept after a handler
// returns; bytes that go into a Raft command or cross a goroutine are copied.
package gateway
