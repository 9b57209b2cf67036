package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"syscall"
	"time"
)

// callMode says when an API call may be sent again.
type callMode int

const (
	// safe calls (reads, issuing a token) are retried on any transport
	// error and on 503, on another node: running one twice harms nothing.
	safe callMode = iota
	// once calls (SETNX, CAS, GETDEL, consume) go to another node only
	// when nothing was sent: run twice, the second would answer as if
	// someone else had done the first.
	once
)

// api sends one call to the API listeners, failing over between them as
// mode allows. Any answer (2xx, 4xx, a final 5xx) is returned; an error
// only when no node answered or ctx ended.
func (c *Client) api(ctx context.Context, mode callMode, method, path string, header http.Header, body []byte) (*answer, error) {
	if len(c.apis) == 0 {
		return nil, &Error{Type: "no-apis", Detail: "Config.APIs is empty"}
	}
	if header == nil {
		header = http.Header{}
	}
	if c.cfg.APIToken != "" {
		header.Set("Authorization", "Bearer "+c.cfg.APIToken)
	}
	write := method != http.MethodGet && method != http.MethodHead
	node := c.start(len(c.apis))
	if write {
		node = c.writeStart()
	}
	var last *Error
	for attempt := 1; ; attempt++ {
		a, err := c.send(ctx, c.apis[node], method, path, header, body)
		if write && (err != nil || a.status == http.StatusServiceUnavailable) {
			c.leaderFailed(node)
		}
		var wait time.Duration
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, &Error{Attempts: attempt, Err: ctx.Err()}
		case err != nil && (mode == safe || nothingSent(err)):
			last = &Error{Attempts: attempt, Err: err}
			node = (node + 1) % len(c.apis)
		case err != nil:
			return nil, &Error{Attempts: attempt, Err: err}
		case a.status == http.StatusServiceUnavailable && mode == safe:
			last = a.errorOf("", attempt)
			wait = retryAfter(a.header)
			node = (node + 1) % len(c.apis)
		default:
			return a, nil
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

// nothingSent reports whether a transport error means the request never
// left: the connection could not be made. Only then is a write that is not
// idempotent by key safe to send to another node.
func nothingSent(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial")
}
