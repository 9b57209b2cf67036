// Package httpx is the HTTP plumbing the two HTTP faces (the gateway's proxy
// and the JSON API) share: the fasthttp listener with its limits, the
// request-body budget, the answers to what fasthttp refuses before a handler
// runs, and every problem answer: the kinds (status, type slug, title), each
// defined once, and the one table from a store error to its kind.
//
// It owns how an error becomes an RFC 9457 problem document: "no quorum" is
// 503 with Retry-After, never a 500. It never routes a request and knows no
// endpoint but the form-token answer both faces give; it keeps nothing of a
// fasthttp.RequestCtx after a handler returns.
package httpx
