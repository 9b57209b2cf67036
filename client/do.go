package client

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// Request is one write to send through the gateway.
type Request struct {
	Method string // default POST
	Path   string // with its query: "/pay?currency=eur"
	Header http.Header
	Body   []byte
	// Key is the idempotency key; empty: a new UUID v4 for this call. One
	// key is one intent: reuse it only to retry the same request.
	Key string
	// KeyHeader is the header the route reads the key from (default
	// Idempotency-Key).
	KeyHeader string
}

// Response is the answer of the upstream (first or replayed).
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	Key    string
	// Replayed: the gateway answered from the stored response; the
	// upstream was not called again.
	Replayed bool
	// IdemStatus is the gateway's Idempotency-Status: created, replayed,
	// released, ...
	IdemStatus string
	Attempts   int
}

// retryable are the gateway's answers a retry with the same key may turn
// into a final one.
var retryable = map[string]bool{
	"in-progress": true, "unavailable": true, "not-ready": true, "upstream-unreachable": true,
	"upstream-timeout": true, "too-many-requests": true,
}

// Post sends body to path with a new key: Do's short form.
func (c *Client) Post(ctx context.Context, path, contentType string, body []byte) (*Response, error) {
	return c.Do(ctx, Request{Path: path, Header: http.Header{"Content-Type": {contentType}}, Body: body})
}

// Do sends req through the gateway, retrying it with the same key until an
// answer is final, the attempts run out or ctx ends. A final answer of the
// upstream, whatever its status, is a *Response; an answer of idemgate
// that is final (key-reuse, outcome-unknown, token-used, invalid-key, ...)
// or the last failure is an *Error.
func (c *Client) Do(ctx context.Context, req Request) (*Response, error) {
	if len(c.gateways) == 0 {
		return nil, &Error{Type: "no-gateways", Detail: "Config.Gateways is empty"}
	}
	if req.Method == "" {
		req.Method = http.MethodPost
	}
	if req.Key == "" {
		req.Key = uuid.NewString()
	}
	if req.KeyHeader == "" {
		req.KeyHeader = "Idempotency-Key"
	}
	h := req.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set(req.KeyHeader, req.Key)
	node := c.start(len(c.gateways))
	var last *Error
	for attempt := 1; ; attempt++ {
		a, err := c.send(ctx, c.gateways[node], req.Method, req.Path, h, req.Body)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, &Error{Key: req.Key, Attempts: attempt, Err: ctx.Err()}
			}
			last = &Error{Key: req.Key, Attempts: attempt, Err: err}
			node = (node + 1) % len(c.gateways) // another node may answer
		default:
			slug, _, isProblem := a.problem()
			replayed := a.header.Get("Idempotent-Replayed") == "true"
			switch {
			case !replayed && (retryable[slug] || (!isProblem && (a.status == 429 || a.status == 503))):
				last = a.errorOf(req.Key, attempt)
				wait = retryAfter(a.header)
				if a.status == 503 {
					node = (node + 1) % len(c.gateways)
				}
			case isProblem:
				return nil, a.errorOf(req.Key, attempt)
			default:
				return &Response{Status: a.status, Header: a.header, Body: a.body, Key: req.Key, Replayed: replayed,
					IdemStatus: a.header.Get("Idempotency-Status"), Attempts: attempt}, nil
			}
		}
		if attempt >= c.cfg.MaxAttempts {
			return nil, last
		}
		if err := c.sleep(ctx, attempt, wait); err != nil {
			last.Err = err
			return nil, last
		}
	}
}

// retryAfter reads Retry-After (seconds or an HTTP date); 0 when absent.
func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// sleep waits before retry number attempt+1: the server's Retry-After
// when it gave one, else exponential backoff from MinBackoff; at most
// MaxBackoff; jittered between half and all of it, so clients that failed
// together do not come back together. It returns ctx's error if ctx ends
// first.
func (c *Client) sleep(ctx context.Context, attempt int, retryAfter time.Duration) error {
	d := c.cfg.MinBackoff << min(attempt-1, 20)
	if retryAfter > 0 {
		d = retryAfter
	}
	d = min(d, c.cfg.MaxBackoff)
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
