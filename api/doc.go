// Package api is idemgate's JSON API listener on fasthttp: the KV keyspace
// with versions, form tokens, idempotency records, suspected duplicates,
// the cluster's status and membership, snapshots, health and metrics,
// behind bearer tokens by role (auth.go, over package auth).
//
// It depends on the store only through its own small Store interface
// (store.go) and on form tokens through tokens.Service; its answers and
// problem documents are internal/httpx's. It never imports the proxy
// (package gateway). A web page's requests are refused before anything
// else (browser.go); nothing from a fasthttp.RequestCtx is kept after a
// handler returns.
package api
