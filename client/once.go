package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/google/uuid"
)

// DefaultOnceLease is the lease Once holds a claim with when
// Config.OnceLease is zero; it renews at a third of it.
const DefaultOnceLease = 30 * time.Second

// ErrStaleFence: the claim was lost while fn ran (its lease ran out before
// a renew reached the cluster, and another caller took it over): fn's
// result was not stored, and the other caller's will be.
var ErrStaleFence = errors.New("client: the once claim was lost to another caller")

func init() { problemErrors["stale-fence"] = ErrStaleFence }

// onceBegun is a begin's answer.
type onceBegun struct {
	State  string `json:"state"`
	Fence  uint64 `json:"fence"`
	Result []byte `json:"result"`
}

// Once runs fn at most once per (scope, key) across every caller of the
// cluster (POST /v1/once/{scope}/{key}/begin): the first caller runs it
// and its result is stored; every later caller gets that result without
// running fn. While another caller's fn runs, Once waits (Retry-After) and
// asks again, until that caller completes (its result), or its lease runs
// out (this caller takes over and runs fn), or ctx ends. The lease
// (Config.OnceLease) is renewed while fn runs; if a renew is refused, the
// claim was lost: fn's ctx is cancelled and Once returns ErrStaleFence,
// its result not stored. If fn fails, the claim is released so the next
// caller runs fn again, and fn's error returned. payload identifies the
// work: another payload under the key is ErrKeyReuse.
func (c *Client) Once(ctx context.Context, scope, key string, payload []byte, fn func(ctx context.Context) ([]byte, error)) ([]byte, error) {
	lease := c.cfg.OnceLease
	if lease <= 0 {
		lease = DefaultOnceLease
	}
	base := "/v1/once/" + url.PathEscape(scope) + "/" + url.PathEscape(key)
	for attempt := 1; ; attempt++ {
		a, err := c.onceCall(ctx, base+"/begin?lease="+lease.String(), http.Header{"Content-Type": {"application/octet-stream"}}, payload)
		if err != nil {
			return nil, err
		}
		switch a.status {
		case http.StatusCreated, http.StatusOK:
			var b onceBegun
			if err := json.Unmarshal(a.body, &b); err != nil {
				return nil, fmt.Errorf("client: once begin answer: %w", err)
			}
			if a.status == http.StatusOK {
				return b.Result, nil
			}
			return c.runOnce(ctx, base, b.Fence, lease, fn)
		case http.StatusConflict:
			if err := c.sleep(ctx, attempt, retryAfter(a.header)); err != nil {
				return nil, &Error{Status: a.status, Type: "in-progress", Attempts: attempt, Err: err}
			}
		default:
			return nil, a.errorOf("", attempt)
		}
	}
}

// runOnce runs fn under the claim of fence, renewing its lease, then
// completes it with fn's result or releases it.
func (c *Client) runOnce(ctx context.Context, base string, fence uint64, lease time.Duration, fn func(ctx context.Context) ([]byte, error)) ([]byte, error) {
	fnCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var lost error
	var mu sync.Mutex
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if err := c.fenced(fnCtx, base+"/renew?lease="+lease.String(), fence, nil); err != nil && fnCtx.Err() == nil {
				if errors.Is(err, ErrStaleFence) {
					mu.Lock()
					lost = err
					mu.Unlock()
					cancel()
					return
				}
				// Not answered (a leader election): the next tick tries again
				// while the lease lasts.
			}
		}
	}()
	result, err := fn(fnCtx)
	close(done)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	switch {
	case lost != nil:
		return nil, lost
	case err != nil:
		// Best effort, and not under ctx (it may be what ended fn): a
		// release that does not reach the cluster leaves the claim to run
		// out with its lease.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), lease)
		defer rcancel()
		c.fenced(rctx, base+"/release", fence, nil)
		return nil, err
	}
	if result == nil {
		result = []byte{}
	}
	if err := c.fenced(ctx, base+"/complete", fence, result); err != nil {
		return nil, err
	}
	return result, nil
}

// fenced sends a holder's call (renew, complete, release) for fence.
func (c *Client) fenced(ctx context.Context, path string, fence uint64, result []byte) error {
	req := map[string]any{"fence": fence}
	if result != nil {
		req["result"] = result
	}
	body, _ := json.Marshal(req)
	a, err := c.onceCall(ctx, path, jsonHeader.Clone(), body)
	if err != nil {
		return err
	}
	if a.status != http.StatusOK {
		return a.errorOf("", 1)
	}
	return nil
}

// onceCall sends a once call under an Idempotency-Key of its own, so that
// a retry after a lost answer (on another node) is answered as the first
// attempt was: a begin that took the claim is not taken for another's.
func (c *Client) onceCall(ctx context.Context, path string, header http.Header, body []byte) (*answer, error) {
	header.Set("Idempotency-Key", uuid.NewString())
	return c.api(ctx, safe, http.MethodPost, path, header, body)
}
