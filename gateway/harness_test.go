package gateway

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testcluster"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/api"
	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/locks"
	"github.com/idemgate/idemgate/once"
	"github.com/idemgate/idemgate/tokens"
)

// gwCluster is n nodes, each with a gateway and an API listener, in front of
// one upstream: over one in-memory store (the behaviour tests), or over a
// real Raft cluster (c set: the wiring tests and benchmarks).
type gwCluster struct {
	c        *testcluster.Cluster
	up       *testsupport.Upstream
	gws      []*Gateway
	gwURLs   []string
	apiURLs  []string
	routes   []config.Route
	registry []*prometheus.Registry
}

const testRoutes = `nodes:
  - {id: n1, raft: "127.0.0.1:1", api: "127.0.0.1:2", listen: "127.0.0.1:3"}
upstream: http://127.0.0.1:4
routes:
  - {name: pay, path: /pay, tenant: "header:X-User-Id", processing_timeout: 3s}
  - {name: slow, path: /slow, on_in_flight: conflict}
  - {name: wait, path: /wait, on_in_flight: wait, wait_timeout: 10s}
  - {name: form, path: /form, token: required}
  - {name: optional, path: /optional, token: optional, require_key: false}
  - {name: big, path: /big, max_stored_body: 1KiB}
  - {name: release, path: /release, release_statuses: [409]}
  - {name: unknown, path: /unknown, processing_timeout: 300ms, ttl: 1h}
  - {name: unknown-release, path: /unknown-release, processing_timeout: 300ms, on_unknown: release}
  - {name: cookies, path: /cookies, replay_headers: [Set-Cookie]}
  - {name: orders, methods: [POST, PUT], path: "/orders/*", key: "query:key", tenant: authorization}
  - {name: strict, path: /strict, on_suspect: reject}
  - {name: loose, path: /loose, match: case-insensitive, trailing_slash: ignore}
  - {name: items, methods: [POST, PUT], path: "/items/*", match: case-insensitive, trailing_slash: ignore}
  - {name: jsonfp, path: /jsonfp, fingerprint: json, fingerprint_ignore: [/meta/request_time, /items/1]}
  - {name: jsonkey, path: /jsonkey, key: "json:/idempotency_key", fingerprint: json}
  - {name: uuidkey, path: /uuidkey, key_format: uuid}
  - {name: fmtkey, path: /fmtkey, key: "query:k", key_format: "order-[0-9]+", key_min_length: 8}
  - {name: dropped, path: /dropped, drop_headers: [X-Execution]}
`

var _ Store = (*memstore.Store)(nil)

// startGateways starts n gateways (and API listeners) over one in-memory
// store, in front of a new counting upstream.
func startGateways(t testing.TB, n int) *gwCluster {
	t.Helper()
	m := memstore.New(t)
	stores := make([]nodeStore, n)
	for i := range stores {
		stores[i] = m
	}
	return startGatewaysOver(t, nil, stores, "")
}

// startClusterGateways starts a real n-node cluster with a gateway and an
// API listener on each node, in front of upstreamAddr, or of a new counting
// upstream when it is empty.
func startClusterGateways(t testing.TB, n int, upstreamAddr string) *gwCluster {
	t.Helper()
	c := testcluster.Start(t, n, nil)
	var stores []nodeStore
	for _, s := range c.Stores {
		stores = append(stores, s)
	}
	return startGatewaysOver(t, c, stores, upstreamAddr)
}

// nodeStore is a store as a node holds it: the proxy's Store, the API's
// (every gateway in these tests has an API listener beside it) and the form
// tokens'.
type nodeStore interface {
	Store
	api.Store
	tokens.Store
	locks.Store
}

// memstore stands in for the store a node holds.
var _ nodeStore = (*memstore.Store)(nil)

func startGatewaysOver(t testing.TB, c *testcluster.Cluster, stores []nodeStore, upstreamAddr string, tweak ...func(*Config)) *gwCluster {
	t.Helper()
	file, err := config.Parse([]byte(testRoutes))
	if err != nil {
		t.Fatal(err)
	}
	gc := &gwCluster{c: c, routes: file.Routes}
	if upstreamAddr == "" {
		gc.up = testsupport.Start(t)
		upstreamAddr = gc.up.Addr
	}
	for _, s := range stores {
		reg := prometheus.NewRegistry()
		tok := tokens.New(s, 30*time.Minute)
		cfg := DefaultConfig()
		cfg.Addr, cfg.Upstream, cfg.Routes = "127.0.0.1:0", "http://"+upstreamAddr, file.Routes
		cfg.MaxRequestBody, cfg.MaxHeaderBytes, cfg.ReadTimeout = 64<<10, 4<<10, 2*time.Second
		cfg.UpstreamTimeout = 2 * time.Second
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		for _, f := range tweak {
			f(&cfg)
		}
		gw, err := New(cfg, s, tok)
		if err != nil {
			t.Fatal(err)
		}
		if err := gw.Register(reg); err != nil {
			t.Fatal(err)
		}
		if err := tok.Register(reg); err != nil {
			t.Fatal(err)
		}
		if err := gw.Listen(); err != nil {
			t.Fatal(err)
		}
		go gw.Serve()
		lockSvc, err := locks.New(s, locks.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		srv := api.New(api.Config{Addr: "127.0.0.1:0", OpTimeout: 5 * time.Second,
			Limits: httpx.Limits{MaxRequestBody: 1 << 20, MaxHeaderBytes: 8 << 10}, Logger: cfg.Logger}, s, tok,
			once.New(s, func(string) time.Duration { return time.Hour }), lockSvc, reg)
		if err := srv.Listen(); err != nil {
			t.Fatal(err)
		}
		go srv.Serve()
		t.Cleanup(func() {
			http.DefaultClient.CloseIdleConnections()
			testsupport.CloseIdle()
			gw.Shutdown(context.Background())
			srv.Shutdown(context.Background())
		})
		gc.gws = append(gc.gws, gw)
		gc.gwURLs = append(gc.gwURLs, "http://"+gw.Addr())
		gc.apiURLs = append(gc.apiURLs, "http://"+srv.Addr())
		gc.registry = append(gc.registry, reg)
	}
	return gc
}

// serveLoopback serves every connection to a new loopback port with serve,
// each on its own goroutine, until the test ends; it returns the address.
func serveLoopback(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return ln.Addr().String()
}
