package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/client"
)

func payRequest(key, user string) client.Request {
	return client.Request{Path: "/pay", Key: key, Body: []byte(`{"amount":1}`),
		Header: http.Header{"X-User-Id": {user}, "Content-Type": {"application/json"}}}
}

// TestDoInProgressRetries: two calls with one key at once: the second gets
// 409 in-progress, waits Retry-After, and gets the replay. One execution.
func TestDoInProgressRetries(t *testing.T) {
	c, err := client.New(client.Config{Gateways: gateways})
	if err != nil {
		t.Fatal(err)
	}
	req := payRequest("inprog-1", "u-inprog")
	req.Header.Set("X-Delay", "1s")
	var wg sync.WaitGroup
	resps := make([]*client.Response, 2)
	for i := range resps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Do(context.Background(), req)
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			resps[i] = r
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if n := upstream.Executions("inprog-1"); n != 1 {
		t.Fatalf("executions = %d, want 1", n)
	}
	if string(resps[0].Body) != string(resps[1].Body) || resps[0].Replayed == resps[1].Replayed {
		t.Fatalf("answers %+v / %+v: want one first and one replay of it", resps[0], resps[1])
	}
	if r := resps[0]; r.Replayed && r.Attempts < 2 || resps[1].Replayed && resps[1].Attempts < 2 {
		t.Errorf("the replayed call took %d/%d attempts: want a retry after 409 in-progress", resps[0].Attempts, resps[1].Attempts)
	}
}

// lossyTransport sends each request, and loses the answer of the first
// `lose` that reached the server: a connection cut after the upstream
// acted.
type lossyTransport struct {
	lose atomic.Int32
}

func (l *lossyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && l.lose.Add(-1) >= 0 {
		resp.Body.Close()
		return nil, errors.New("connection reset by peer (lost answer)")
	}
	return resp, err
}

// TestDoTransportErrorReplays: the answer is lost after the upstream
// acted; the retry, same key, gets the replay.
func TestDoTransportErrorReplays(t *testing.T) {
	lossy := &lossyTransport{}
	lossy.lose.Store(2)
	c, _ := client.New(client.Config{Gateways: gateways, HTTPClient: &http.Client{Transport: lossy}, MinBackoff: 10 * time.Millisecond})
	r, err := c.Do(context.Background(), payRequest("lost-1", "u-lost"))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Replayed || r.Attempts != 3 || upstream.Executions("lost-1") != 1 {
		t.Fatalf("answer %+v, executions %d: want the replay on the third attempt, one execution", r, upstream.Executions("lost-1"))
	}
}

// TestDoFailover: a node that refuses connections is skipped.
func TestDoFailover(t *testing.T) {
	// Port 1: nothing listens there (a free port left unbound could be
	// taken by another process meanwhile).
	dead := []string{"127.0.0.1:1"}
	c, _ := client.New(client.Config{Gateways: []string{"http://" + dead[0], gateways[1]}, MinBackoff: 10 * time.Millisecond})
	for i := range 4 { // the calls start at either node
		r, err := c.Do(context.Background(), payRequest(fmt.Sprintf("failover-%d", i), "u-failover"))
		if err != nil || r.Status != 201 {
			t.Fatalf("call %d: %+v %v", i, r, err)
		}
	}
	kv, _ := client.New(client.Config{APIs: []string{"http://" + dead[0], apis[2]}, MinBackoff: 10 * time.Millisecond})
	for i := range 4 { // a write that is not idempotent goes on only because nothing was sent
		if _, _, err := kv.KV.SetNX(context.Background(), fmt.Sprintf("failover-%d", i), []byte("v"), time.Minute); err != nil {
			t.Fatalf("SetNX %d: %v", i, err)
		}
	}
}

// problemServer answers every request with the given problem (a stand-in
// for the gateway in states a test cannot easily put it in: an outcome
// that stays unknown, a 503 that never ends), counting requests.
func problemServer(t *testing.T, status int, slug string, hdr ...string) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"%s%s","title":"t","status":%d,"detail":"d"}`, client.ProblemBase, slug, status)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestDoTypedErrors: final problems come back at once as typed errors;
// retryable ones are retried until MaxAttempts or the context ends.
func TestDoTypedErrors(t *testing.T) {
	type typed struct {
		status   int
		slug     string
		want     error
		attempts int32
	}
	tests := []typed{
		{422, "key-reuse", client.ErrKeyReuse, 1},
		{409, "outcome-unknown", client.ErrOutcomeUnknown, 1},
		{409, "token-used", client.ErrTokenUsed, 1},
		{409, "in-progress", client.ErrInProgress, 3},
		{503, "unavailable", client.ErrUnavailable, 3},
	}
	for _, tt := range tests {
		srv, n := problemServer(t, tt.status, tt.slug)
		c, _ := client.New(client.Config{Gateways: []string{srv.URL}, MaxAttempts: 3, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
		_, err := c.Do(context.Background(), client.Request{Path: "/pay", Key: "k"})
		var ce *client.Error
		if !errors.Is(err, tt.want) || !errors.As(err, &ce) || ce.Key != "k" || n.Load() != tt.attempts {
			t.Errorf("%s: err %v after %d requests, want %v after %d", tt.slug, err, n.Load(), tt.want, tt.attempts)
		}
	}
}

// TestDoRetryAfterBoundedByContext: a Retry-After longer than the context
// ends the call with the context, not after the wait.
func TestDoRetryAfterBoundedByContext(t *testing.T) {
	srv, n := problemServer(t, 409, "in-progress", "Retry-After", "3")
	c, _ := client.New(client.Config{Gateways: []string{srv.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Do(ctx, client.Request{Path: "/pay"})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, client.ErrInProgress) || n.Load() != 1 {
		t.Fatalf("err %v after %d requests, want in-progress ended by the context after 1", err, n.Load())
	}
	if time.Since(start) > 2*time.Second {
		t.Fatalf("the call waited %s: it slept through Retry-After past its context", time.Since(start))
	}
}

// TestUpstreamAnswersAreResponses: the upstream's own 4xx/5xx are answers,
// not errors, and are not retried (but 503 and 429, which release the key).
func TestUpstreamAnswersAreResponses(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.WriteHeader(503) // the upstream's: released, retried
			return
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(400)
		fmt.Fprint(w, `{"type":"https://example.com/card-declined","status":400}`)
	}))
	defer srv.Close()
	c, _ := client.New(client.Config{Gateways: []string{srv.URL}, MinBackoff: time.Millisecond})
	r, err := c.Do(context.Background(), client.Request{Path: "/pay"})
	if err != nil || r.Status != 400 || n.Load() != 2 || !strings.Contains(string(r.Body), "card-declined") {
		t.Fatalf("answer %+v, %v after %d requests: want the upstream's 400 after one retry", r, err, n.Load())
	}
}

// TestNewRefusesBadConfig: endpoints that are not http(s)://host:port.
func TestNewRefusesBadConfig(t *testing.T) {
	bad := []client.Config{
		{},
		{Gateways: []string{"127.0.0.1:8001"}},
		{Gateways: []string{"ftp://127.0.0.1:8001"}},
		{Gateways: []string{"http://"}},
		{Gateways: []string{"http://127.0.0.1:8001/pay"}},
		{APIs: []string{"http://127.0.0.1:9001?x=1"}},
		{APIs: []string{"http://[::1"}},
	}
	for _, cfg := range bad {
		if _, err := client.New(cfg); err == nil || !strings.HasPrefix(err.Error(), "client: ") {
			t.Errorf("New(%+v) = %v, want a client: error", cfg, err)
		}
	}
}

// TestKVKeysEscaped: keys with characters a path treats specially round
// trip; keys the API refuses are errors, never a panic.
func TestKVKeysEscaped(t *testing.T) {
	c, _ := client.New(client.Config{APIs: apis})
	ctx := context.Background()
	for _, key := range []string{"a/b", "with space", "q?x=1#f", "%41", "ünïcode", "..", "."} {
		if _, err := c.KV.Set(ctx, key, []byte(key), time.Minute); err != nil {
			t.Errorf("Set(%q): %v", key, err)
			continue
		}
		if e, err := c.KV.Get(ctx, key); err != nil || string(e.Value) != key {
			t.Errorf("Get(%q) = %v, %v", key, e, err)
		}
	}
	for _, key := range []string{"", strings.Repeat("k", 256), "nul\x00"} {
		var ce *client.Error
		if _, err := c.KV.Set(ctx, key, []byte("v"), 0); !errors.As(err, &ce) || ce.Status/100 != 4 {
			t.Errorf("Set(%.20q) = %v, want a 4xx *Error", key, err)
		}
	}
	if _, err := c.KV.Get(ctx, "never-set"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("Get of an absent key = %v, want ErrNotFound", err)
	}
}
