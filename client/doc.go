// Package client is the Go half of idemgate's contract: what a service
// does to call an idemgate-fronted API safely, and the API's form tokens
// and KV primitives.
//
// Client.Do sends a write with an idempotency key (a new UUID per call, or
// the caller's) and retries it, with the same key, on transport errors,
// 409 in-progress, 429 and 503 (and the gateway's 502 upstream-unreachable
// and 504 upstream-timeout), honouring Retry-After with jittered
// exponential backoff, bounded by the context and Config.MaxAttempts, as
// Stripe's client libraries do. It fails over between the nodes it is
// given. Answers that cannot be retried into success come back as *Error,
// matched with errors.Is against ErrKeyReuse, ErrTokenUsed,
// ErrOutcomeUnknown and their kin; the upstream's own answers, 4xx and 5xx
// included, come back as a *Response.
//
// Tokens and KV speak to the API listeners. A write there is retried on
// another node only when nothing was sent (the connection was refused): a
// SETNX or a token consume retried after it was carried out would answer
// as if someone else had done it.
//
// The package never retries with a new key, and never reads the body of
// a request twice from the caller: Do takes the body as bytes.
package client
