package gateway

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/tracing"
)

// BenchmarkGatewayTracing measures first requests and replays with tracing
// off, at a 1% and at a 100% sampling ratio, in one run on one 3-node
// loopback cluster in front of a trivial upstream: three sets of gateways
// over the same stores, the traced ones exporting to a collector on
// loopback (which decodes every export), clients spread over the nodes.
// Allocations are the whole process's per request (clients, nodes,
// upstream, collector): unlike the times, they do not depend on the
// machine's load. Requests come without a traceparent: each starts its trace at the
// gateway, where the ratio decides (a caller's sampled flag would).
//
//	go test -run XXX -bench GatewayTracing -benchtime 2000x ./gateway
func BenchmarkGatewayTracing(b *testing.B) {
	up := startTrivialUpstream(b)
	col := testsupport.StartCollector(b)
	off := startClusterGateways(b, 3, up.addr) // the untraced set
	c := off.c
	var stores []nodeStore
	for _, s := range c.Stores {
		stores = append(stores, s)
	}
	sets := []struct {
		name string
		gc   *gwCluster
	}{{"off", off}}
	var provs []*tracing.Provider
	for _, ratio := range []float64{0.01, 1} {
		gc, p := tracedGateways(b, c, stores, up.addr, col.URL, ratio, nil)
		provs = append(provs, p...)
		sets = append(sets, struct {
			name string
			gc   *gwCluster
		}{fmt.Sprintf("%g%%", ratio*100), gc})
	}
	c.WaitLeader(5 * time.Second)
	var seq atomic.Uint64
	post := func(hc *fasthttp.HostClient, key string) error {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI("http://x/pay")
		req.Header.SetMethod("POST")
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("X-User-Id", "bench")
		req.SetBodyString(`{"amount":100,"currency":"eur"}`)
		if err := hc.Do(req, resp); err != nil {
			return err
		}
		if resp.StatusCode() != 201 {
			return fmt.Errorf("%s: status %d: %s", key, resp.StatusCode(), resp.Body())
		}
		return nil
	}
	for _, set := range sets {
		hosts := make([]*fasthttp.HostClient, 3)
		for i, u := range set.gc.gwURLs {
			hosts[i] = &fasthttp.HostClient{Addr: strings.TrimPrefix(u, "http://"), MaxConns: 256}
			if err := post(hosts[i], "replayed-"+set.name); err != nil { // one completed key, on every node
				b.Fatal(err)
			}
		}
		for _, kind := range []string{"first", "replay"} {
			for _, n := range []int{1, 64} {
				b.Run(fmt.Sprintf("tracing=%s/%s/clients=%d", set.name, kind, n), func(b *testing.B) {
					b.ReportAllocs() // the whole process's: clients, three nodes, upstream, collector
					testsupport.RunClients(b, n, func(cl int) error {
						key := "replayed-" + set.name
						if kind == "first" {
							key = fmt.Sprint("f-", set.name, "-", seq.Add(1))
						}
						return post(hosts[cl%3], key)
					})
				})
			}
		}
	}
	var st tracing.Stats
	for _, p := range provs {
		s := p.Stats()
		st.Exported, st.Dropped, st.Failed = st.Exported+s.Exported, st.Dropped+s.Dropped, st.Failed+s.Failed
	}
	b.Logf("spans exported %d, dropped %d, failed %d", st.Exported, st.Dropped, st.Failed)
}
