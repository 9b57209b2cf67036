package gateway

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// trivialUpstream answers every request with a small 201 and counts
// executions per Idempotency-Key.
type trivialUpstream struct {
	addr  string
	mu    sync.Mutex
	byKey map[string]int
}

func startTrivialUpstream(b testing.TB) *trivialUpstream {
	u := &trivialUpstream{byKey: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	u.addr = ln.Addr().String()
	body := []byte(`{"id":"ch_1","status":"succeeded","amount":100}`)
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if k := ctx.Request.Header.Peek("Idempotency-Key"); len(k) > 0 {
			u.mu.Lock()
			u.byKey[string(k)]++
			u.mu.Unlock()
		}
		ctx.SetStatusCode(201)
		ctx.SetContentType("application/json")
		ctx.SetBody(body)
	}}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Shutdown() })
	return u
}

// BenchmarkGateway measures, in one run on one 3-node loopback cluster in
// front of a trivial upstream:
//
//	upstream-direct   the upstream called directly (the baseline)
//	passthrough       the same request proxied without idempotency
//	replay            duplicates of a completed key
//	first             first requests (fresh keys): begin, upstream, complete
//	raft-apply        one raw raft.Apply of a 64-byte no-op on the leader
//	hotkey            64 clients on one key for 10 s: one upstream execution
//
// Clients are spread over the three nodes. Added latency of a first request
// = first p50 - upstream-direct p50, compared with raft-apply p50.
//
//	go test -run XXX -bench Gateway -benchtime 3000x ./gateway
func BenchmarkGateway(b *testing.B) {
	up := startTrivialUpstream(b)
	gc := startClusterGateways(b, 3, up.addr)
	leader := gc.c.WaitLeader(5 * time.Second)
	hosts := make([]*fasthttp.HostClient, 3)
	for i, u := range gc.gwURLs {
		hosts[i] = &fasthttp.HostClient{Addr: strings.TrimPrefix(u, "http://"), MaxConns: 256}
	}
	direct := &fasthttp.HostClient{Addr: up.addr, MaxConns: 256}
	var seq atomic.Uint64
	post := func(hc *fasthttp.HostClient, path, key string, want int) error {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI("http://x" + path)
		req.Header.SetMethod("POST")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		req.Header.Set("X-User-Id", "bench")
		req.SetBodyString(`{"amount":100,"currency":"eur"}`)
		if err := hc.Do(req, resp); err != nil {
			return err
		}
		if resp.StatusCode() != want {
			return fmt.Errorf("%s %s: status %d: %s", path, key, resp.StatusCode(), resp.Body())
		}
		return nil
	}
	// One completed key to replay, present on every node.
	for i := range hosts {
		if err := post(hosts[i], "/pay", "replayed-key", 201); err != nil {
			b.Fatal(err)
		}
	}
	noop := command.NoopCommand(make([]byte, 64)).Encode(nil)
	r := gc.c.Stores[leader].Raft()
	for i := 0; i < 500; i++ { // warm the engine before the baseline
		r.Apply(append([]byte(nil), noop...), 0).Error()
	}
	cases := []struct {
		name    string
		clients []int
		op      func(c int) error
	}{
		{"upstream-direct", []int{1, 64}, func(int) error { return post(direct, "/pay", "", 201) }},
		{"passthrough", []int{1, 64}, func(c int) error { return post(hosts[c%3], "/other", "", 201) }},
		{"replay", []int{1, 64}, func(c int) error { return post(hosts[c%3], "/pay", "replayed-key", 201) }},
		{"first", []int{1, 64}, func(c int) error { return post(hosts[c%3], "/pay", fmt.Sprint("f-", seq.Add(1)), 201) }},
		{"raft-apply", []int{1}, func(int) error { return r.Apply(append([]byte(nil), noop...), 0).Error() }},
	}
	for _, tc := range cases {
		for _, n := range tc.clients {
			b.Run(fmt.Sprintf("%s/clients=%d", tc.name, n), func(b *testing.B) { testsupport.RunClients(b, n, tc.op) })
		}
	}
	// The contention case: one key, 64 clients, 10 seconds. Answers are
	// the first, replays, or 409 in-progress while the first runs.
	b.Run("hotkey/clients=64", func(b *testing.B) {
		var answers, conflicts atomic.Int64
		stop := time.Now().Add(10 * time.Second)
		var wg sync.WaitGroup
		b.ResetTimer()
		start := time.Now()
		for c := 0; c < 64; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				for time.Now().Before(stop) {
					req.SetRequestURI("http://x/pay")
					req.Header.SetMethod("POST")
					req.Header.Set("Idempotency-Key", "the-hot-key")
					req.SetBodyString(`{"amount":100,"currency":"eur"}`)
					if err := hosts[c%3].Do(req, resp); err != nil {
						b.Error(err)
						return
					}
					switch resp.StatusCode() {
					case 201:
					case 409:
						conflicts.Add(1)
					default:
						b.Errorf("hot key answered %d", resp.StatusCode())
						return
					}
					answers.Add(1)
				}
			}(c)
		}
		wg.Wait()
		elapsed := time.Since(start)
		up.mu.Lock()
		executions := up.byKey["the-hot-key"]
		up.mu.Unlock()
		if executions != 1 {
			b.Fatalf("the hot key executed %d times upstream, want 1", executions)
		}
		b.ReportMetric(float64(answers.Load())/elapsed.Seconds(), "answers/s")
		b.ReportMetric(float64(conflicts.Load()), "409s")
		b.ReportMetric(float64(executions), "executions")
	})
}
