package gateway

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/raftstore"
	"github.com/idemgate/idemgate/tokens"
)

// upstream is a real HTTP server that "charges": it counts executions per
// Idempotency-Key and answers with a body unique to the execution, so a
// replay that is not byte-identical, or a second execution, is visible.
type upstream struct {
	srv   *http.Server
	addr  string
	calls atomic.Int64
	mu    sync.Mutex
	byKey map[string]int
	delay atomic.Int64 // nanoseconds per request
	// status, when set, is answered instead of 201 for paths it names.
	status sync.Map // path -> int
}

func startUpstream(t testing.TB) *upstream {
	t.Helper()
	u := &upstream{byKey: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.addr = ln.Addr().String()
	u.srv = &http.Server{Handler: http.HandlerFunc(u.serve), ReadHeaderTimeout: 5 * time.Second}
	go u.srv.Serve(ln)
	t.Cleanup(func() { u.srv.Close() })
	return u
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := u.calls.Add(1)
	key := r.Header.Get("Idempotency-Key")
	u.mu.Lock()
	u.byKey[key]++
	u.mu.Unlock()
	if d := u.delay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Execution", strconv.FormatInt(n, 10))
	w.Header().Set("Set-Cookie", "session=secret")
	w.Header().Set("X-Request-Id-Seen", r.Header.Get("X-Request-Id"))
	w.Header().Set("X-Forwarded-For-Seen", strings.Join(r.Header.Values("X-Forwarded-For"), " | "))
	w.Header().Set("X-Forwarded-Proto-Seen", strings.Join(r.Header.Values("X-Forwarded-Proto"), " | "))
	// ?fat=N: N KiB of response headers, in headers of 1 KiB.
	if n, _ := strconv.Atoi(r.URL.Query().Get("fat")); n > 0 {
		for i := range n {
			w.Header().Set(fmt.Sprintf("X-Fat-%d", i), strings.Repeat("f", 1024-len("X-Fat-000: \r\n")))
		}
	}
	status := http.StatusCreated
	if s, ok := u.status.Load(r.URL.Path); ok {
		status = s.(int)
	}
	if r.URL.Path == "/big" {
		w.WriteHeader(status)
		w.Write([]byte(strings.Repeat("x", 4096)))
		return
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"execution":%d,"key":%q,"user":%q,"body":%q}`, n, key, r.Header.Get("X-User-Id"), body)
}

func (u *upstream) executions(key string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.byKey[key]
}

// gwCluster is n nodes, each with a gateway and an API listener, in front of
// one upstream: over one in-memory store (the behaviour tests), or over a
// real Raft cluster (c set: the wiring tests and benchmarks).
type gwCluster struct {
	c        *raftstore.TestCluster
	up       *upstream
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
`

var _ Store = (*memstore.Store)(nil)

// startGateways starts n gateways (and API listeners) over one in-memory
// store, in front of a new counting upstream.
func startGateways(t testing.TB, n int) *gwCluster {
	t.Helper()
	m := memstore.New(t)
	stores := make([]Store, n)
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
	c := raftstore.StartTestCluster(t, n, nil)
	var stores []Store
	for _, s := range c.Stores {
		stores = append(stores, s)
	}
	return startGatewaysOver(t, c, stores, upstreamAddr)
}

func startGatewaysOver(t testing.TB, c *raftstore.TestCluster, stores []Store, upstreamAddr string, tweak ...func(*Config)) *gwCluster {
	t.Helper()
	file, err := config.Parse([]byte(testRoutes))
	if err != nil {
		t.Fatal(err)
	}
	gc := &gwCluster{c: c, routes: file.Routes}
	if upstreamAddr == "" {
		gc.up = startUpstream(t)
		upstreamAddr = gc.up.addr
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
		api := NewAPI(APIConfig{Addr: "127.0.0.1:0", OpTimeout: 5 * time.Second,
			Limits: Limits{MaxRequestBody: 1 << 20, MaxHeaderBytes: 8 << 10}, Logger: cfg.Logger}, s, tok, reg)
		if err := api.Listen(); err != nil {
			t.Fatal(err)
		}
		go api.Serve()
		t.Cleanup(func() { http.DefaultClient.CloseIdleConnections(); gw.srv.Shutdown(); api.srv.Shutdown() })
		gc.gws = append(gc.gws, gw)
		gc.gwURLs = append(gc.gwURLs, "http://"+gw.Addr())
		gc.apiURLs = append(gc.apiURLs, "http://"+api.Addr())
		gc.registry = append(gc.registry, reg)
	}
	return gc
}
