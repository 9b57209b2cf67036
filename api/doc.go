// Package api is idemgate's JSON API listener on fasthttp: the KV keyspace
// with versions, form tokens, idempotency records, suspected duplicates,
// the cluster's status and membership, snapshots, health and metrics,
// behind bearer tokens by role (auth.go, over package auth).
//
// Its routes are one table (routes.go) that the router, the token check
// and the tests of api/openapi.json read. It depends on the store only
// through its own small interfaces, one per concern (store.go), and on
// form tokens, once claims and locks through interfaces of what it calls
// of them (services.go); each group of handlers holds only the one it
// uses (handlers.go). Its answers and problem documents are
// internal/httpx's. It never imports the proxy
// (package gateway). A web page's requests are refused before anything
// else (browser.go); nothing from a fasthttp.RequestCtx is kept after a
// handler returns.
package api
