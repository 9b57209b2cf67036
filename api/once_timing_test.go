package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/once"
	"github.com/idemgate/idemgate/storeapi"
)

// BenchmarkOncePairHTTP is the HTTP face's own cost of a once pair: a
// begin then its complete, each under an Idempotency-Key of its own, as
// idemgate bench's once scenario sends them, from one client over
// loopback to one API listener on the real state machine without Raft
// (memstore). "service" runs the same two calls on the once service
// directly, under request ids derived the same way, so the difference of
// the two rows, measured in the same run, is what the listener and
// fasthttp's client spend on the pair: parsing, routing, JSON, the answer
// and the loopback. cpu-µs/pair is the process's CPU (getrusage), allocs
// the whole process's. Not a timed test: the figures go in the commit
// that changes the path.
//
//	go test -run '^$' -bench OncePairHTTP -benchtime 20000x -benchmem ./api
func BenchmarkOncePairHTTP(b *testing.B) {
	payload := []byte(`{"to":"+4912345","text":"welcome"}`)
	const lease = 30 * time.Second
	b.Run("service", func(b *testing.B) {
		svc := once.New(memstore.New(b), testRetention)
		pairs(b, func(key string, result []byte) error {
			ctx := storeapi.WithRequestID(context.Background(), storeapi.RequestIDFor([]byte(key), []byte("b")))
			out, err := svc.Begin(ctx, "bench", key, payload, lease)
			if err != nil || out.Fence == 0 {
				return fmt.Errorf("begin: %+v %v", out, err)
			}
			ctx = storeapi.WithRequestID(context.Background(), storeapi.RequestIDFor([]byte(key), []byte("c")))
			return svc.Complete(ctx, "bench", key, out.Fence, result)
		})
	})
	b.Run("http", func(b *testing.B) {
		// The OpenAPI check the package's tests wrap every listener in is
		// the tests' own cost: not measured.
		saved := wrapHandler
		wrapHandler = nil
		ac := &apiCluster{}
		ac.serve(b, memstore.New(b), prometheus.NewRegistry(), nil)
		wrapHandler = saved
		hc := &fasthttp.HostClient{Addr: strings.TrimPrefix(ac.urls[0], "http://")}
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		post := func(url, key, contentType string, body []byte, want int) ([]byte, error) {
			req.Reset()
			req.SetRequestURI(url)
			req.Header.SetMethod("POST")
			req.Header.Set("Idempotency-Key", key)
			if contentType != "" {
				req.Header.SetContentType(contentType)
			}
			req.SetBody(body)
			if err := hc.Do(req, resp); err != nil {
				return nil, err
			}
			if resp.StatusCode() != want {
				return nil, fmt.Errorf("%s: status %d: %s", url, resp.StatusCode(), resp.Body())
			}
			return resp.Body(), nil
		}
		pairs(b, func(key string, result []byte) error {
			base := ac.urls[0] + "/v1/once/bench/" + key
			body, err := post(base+"/begin?lease=30s", key+"-b", "", payload, 201)
			if err != nil {
				return err
			}
			var begun struct {
				Fence uint64 `json:"fence"`
			}
			if err := json.Unmarshal(body, &begun); err != nil || begun.Fence == 0 {
				return fmt.Errorf("begin: %s", body)
			}
			complete := fmt.Sprintf(`{"fence":%d,"result":%q}`, begun.Fence, base64.StdEncoding.EncodeToString(result))
			_, err = post(base+"/complete", key+"-c", "application/json", []byte(complete), 200)
			return err
		})
	})
}

// pairs runs b.N pairs of fresh keys one after the other and reports the
// process's CPU per pair.
func pairs(b *testing.B, pair func(key string, result []byte) error) {
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	for n := range b.N {
		if err := pair(fmt.Sprintf("o-%d", n), []byte(fmt.Sprintf("sms-%d", n))); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/1e3/float64(b.N), "cpu-µs/pair")
}

// processCPU is the process's user and system CPU so far, in nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
