package api

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/once"
	"github.com/idemgate/idemgate/storeapi"
	"github.com/idemgate/idemgate/tokens"
)

// watchedStore is the in-memory store, counting the calls that change
// state or read it wholesale: a refused request must make none.
type watchedStore struct {
	nodeStore
	calls atomic.Int64
}

func (s *watchedStore) count() { s.calls.Add(1) }

func (s *watchedStore) ApplyKV(ctx context.Context, c *command.Command) (*command.Result, error) {
	s.count()
	return s.nodeStore.ApplyKV(ctx, c)
}

func (s *watchedStore) KV(ctx context.Context, key []byte, local bool) (command.KVEntry, error) {
	s.count()
	return s.nodeStore.KV(ctx, key, local)
}

func (s *watchedStore) ConsumeToken(ctx context.Context, key []byte) error {
	s.count()
	return s.nodeStore.ConsumeToken(ctx, key)
}

func (s *watchedStore) IssueToken(ctx context.Context, key []byte, ttl time.Duration) (time.Time, error) {
	s.count()
	return s.nodeStore.IssueToken(ctx, key, ttl)
}

func (s *watchedStore) Release(ctx context.Context, key []byte, fence uint64) error {
	s.count()
	return s.nodeStore.Release(ctx, key, fence)
}

func (s *watchedStore) Promote(ctx context.Context, id string, force bool) error {
	s.count()
	return s.nodeStore.Promote(ctx, id, force)
}

func (s *watchedStore) RemoveServer(ctx context.Context, id string, force bool) error {
	s.count()
	return s.nodeStore.RemoveServer(ctx, id, force)
}

func (s *watchedStore) AddVoter(ctx context.Context, id, raftAddr string) error {
	s.count()
	return s.nodeStore.AddVoter(ctx, id, raftAddr)
}

func (s *watchedStore) AddNonvoter(ctx context.Context, id, raftAddr string) error {
	s.count()
	return s.nodeStore.AddNonvoter(ctx, id, raftAddr)
}

func (s *watchedStore) TakeSnapshot(ctx context.Context) (storeapi.SnapshotInfo, error) {
	s.count()
	return s.nodeStore.TakeSnapshot(ctx)
}

func (s *watchedStore) Backup(ctx context.Context) (*storeapi.Backup, error) {
	s.count()
	return s.nodeStore.Backup(ctx)
}

// startWatchedAPI starts an API listener over a watched in-memory store,
// serving TLS with tlsCfg unless it is nil, with hosts as its names.
func startWatchedAPI(t *testing.T, tlsCfg *tls.Config, hosts ...string) (*watchedStore, *API) {
	t.Helper()
	ws := &watchedStore{nodeStore: memstore.New(t)}
	api := New(Config{Addr: "127.0.0.1:0", OpTimeout: 5 * time.Second,
		Limits: httpx.Limits{MaxRequestBody: 1 << 20, MaxHeaderBytes: 8 << 10, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Hosts: hosts}, ws, tokens.New(ws, 30*time.Minute), once.New(ws, testRetention), newLocks(t, ws), prometheus.NewRegistry())
	if tlsCfg != nil {
		api.UseTLS(tlsCfg)
	}
	if err := api.Listen(); err != nil {
		t.Fatal(err)
	}
	go api.Serve()
	t.Cleanup(func() { api.Shutdown(context.Background()) })
	return ws, api
}

// TestAPIBrowserRequests: what a web page can make a visitor's browser
// send to a plaintext API (a form post, a no-cors fetch, a fetch to a name
// rebound to the node's address) is refused before it touches the store,
// on every state-changing endpoint, bodiless ones included, and on reads
// a rebound page could otherwise see; clients that are not browsers (no
// Origin, no Sec-Fetch-Site, Host an address or a configured name) need no
// new header.
func TestAPIBrowserRequests(t *testing.T) {
	t.Parallel()
	ws, api := startWatchedAPI(t, nil, "api.example.com", "node2.internal:9001", "10.0.0.9:9001")
	t.Cleanup(testsupport.CloseIdle)
	base := "http://" + api.Addr()
	_, port, _ := strings.Cut(api.Addr(), ":")
	if r := do(t, "PUT", base+"/v1/kv/order-42", "charged"); r.Status != 200 {
		t.Fatalf("setup: %d %s", r.Status, r.Body)
	}
	form := "application/x-www-form-urlencoded"
	crossSite := []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"}
	rebound := []string{"Host", "evil.example:" + port, "Origin", "http://evil.example:" + port, "Sec-Fetch-Site", "same-origin"}
	with := func(hdr []string, more ...string) []string { return append(append([]string(nil), hdr...), more...) }
	refused := []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		ptype                    string
	}{
		// A form post (text/plain, urlencoded, multipart) from another site.
		{"snapshot, form post", "POST", "/v1/snapshot", "", with(crossSite, "Content-Type", form), 403, "cross-origin"},
		{"promote, text/plain", "POST", "/v1/cluster/nodes/n1/promote", "x", with(crossSite, "Content-Type", "text/plain"), 403, "cross-origin"},
		{"add a node, multipart", "POST", "/v1/cluster/nodes", "--b--", with(crossSite, "Content-Type", "multipart/form-data; boundary=b"), 403, "cross-origin"},
		{"consume a token, form post", "POST", "/v1/tokens/consume", "scope=pay&token=x", with(crossSite, "Content-Type", form), 403, "cross-origin"},
		{"issue a token, text/plain JSON", "POST", "/v1/tokens", `{"scope":"pay"}`, with(crossSite, "Content-Type", "text/plain"), 403, "cross-origin"},
		{"release a record, no-cors", "DELETE", "/v1/records/pay/k", "", crossSite, 403, "cross-origin"},
		{"kv put, no-cors", "PUT", "/v1/kv/order-42", "evil", with(crossSite, "Content-Type", "text/plain"), 403, "cross-origin"},
		{"kv delete", "DELETE", "/v1/kv/order-42", "", crossSite, 403, "cross-origin"},
		{"remove a node", "DELETE", "/v1/cluster/nodes/n1", "", crossSite, 403, "cross-origin"},
		{"a read, cross-site", "GET", "/v1/kv/order-42", "", crossSite, 403, "cross-origin"},
		// Another site of the same registrable domain, or another port of
		// the node's address: same-site, not same-origin.
		{"snapshot, same-site", "POST", "/v1/snapshot", "", []string{"Sec-Fetch-Site", "same-site", "Origin", "http://127.0.0.1:8080"}, 403, "cross-origin"},
		// A browser that sends Origin but not Sec-Fetch-Site.
		{"snapshot, old browser", "POST", "/v1/snapshot", "", []string{"Origin", "http://evil.example"}, 403, "cross-origin"},
		{"snapshot, another port", "POST", "/v1/snapshot", "", []string{"Origin", "http://127.0.0.1:8080"}, 403, "cross-origin"},
		{"snapshot, opaque origin", "POST", "/v1/snapshot", "", []string{"Origin", "null"}, 403, "cross-origin"},
		{"snapshot, unparsable origin", "POST", "/v1/snapshot", "", []string{"Origin", "http://[::1"}, 403, "cross-origin"},
		// A form post from a browser that sends neither Origin nor
		// Sec-Fetch-Site (Firefox before 70): a form's type is enough.
		{"snapshot, form post, oldest browser", "POST", "/v1/snapshot", "", []string{"Content-Type", form}, 415, "unsupported-media-type"},
		{"promote, text/plain, oldest browser", "POST", "/v1/cluster/nodes/n1/promote", "x", []string{"Content-Type", "text/plain; charset=UTF-8"}, 415, "unsupported-media-type"},
		{"snapshot, multipart, oldest browser", "POST", "/v1/snapshot", "--b--", []string{"Content-Type", "Multipart/Form-Data; boundary=b"}, 415, "unsupported-media-type"},
		// DNS rebinding: same-origin to the browser, but the Host is the
		// page's name.
		{"rebound snapshot", "POST", "/v1/snapshot", "", rebound, 421, "misdirected-request"},
		{"rebound kv put", "PUT", "/v1/kv/order-42", "evil", with(rebound, "Content-Type", "text/plain"), 421, "misdirected-request"},
		{"rebound kv read", "GET", "/v1/kv/order-42", "", rebound, 421, "misdirected-request"},
		{"rebound backup", "GET", "/v1/snapshot", "", rebound, 421, "misdirected-request"},
		{"rebound metrics", "GET", "/metrics", "", rebound, 421, "misdirected-request"},
		{"rebound, no browser headers", "POST", "/v1/snapshot", "", []string{"Host", "evil.example"}, 421, "misdirected-request"},
		{"a name under localhost's", "POST", "/v1/snapshot", "", []string{"Host", "localhost.evil.example:" + port}, 421, "misdirected-request"},
		{"an address spelled as a name", "POST", "/v1/snapshot", "", []string{"Host", "127.0.0.1.nip.io:" + port}, 421, "misdirected-request"},
		// fasthttp refuses a Host it cannot parse before the API sees it.
		{"a port that is not one", "POST", "/v1/snapshot", "", []string{"Host", "localhost:x"}, 400, "bad-request"},
		{"an unclosed v6 address", "POST", "/v1/snapshot", "", []string{"Host", "[::1:" + port}, 400, "bad-request"},
	}
	for _, tt := range refused {
		before := ws.calls.Load()
		r := do(t, tt.method, base+tt.path, tt.body, tt.hdr...)
		if r.Status != tt.status || r.ProblemType(t) != tt.ptype {
			t.Errorf("%s: got %d %s, want %d %s", tt.name, r.Status, r.Body, tt.status, tt.ptype)
		}
		if n := ws.calls.Load() - before; n != 0 {
			t.Errorf("%s: the store was called %d times", tt.name, n)
		}
	}
	if r := do(t, "GET", base+"/v1/kv/order-42", ""); r.Status != 200 || r.Body != "charged" {
		t.Fatalf("the value after the refused requests: %d %q, want 200 charged", r.Status, r.Body)
	}
	// Not browsers, or a browser on the API's own origin: served.
	served := []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
	}{
		{"curl --data-binary (a form type)", "PUT", "/v1/kv/k1", "v", []string{"Content-Type", form}, 200},
		{"a bodiless POST", "POST", "/v1/snapshot", "", nil, 200},
		{"typed into the address bar", "GET", "/v1/kv/k1", "", []string{"Sec-Fetch-Site", "none", "Sec-Fetch-Mode", "navigate"}, 200},
		{"a page of the API's own origin", "PUT", "/v1/kv/k2", "v", []string{"Sec-Fetch-Site", "same-origin", "Origin", base}, 200},
		{"an old browser on the API's own origin", "PUT", "/v1/kv/k3", "v", []string{"Origin", base}, 200},
		{"Host localhost", "PUT", "/v1/kv/k4", "v", []string{"Host", "localhost:" + port}, 200},
		{"Host LOCALHOST., no port", "PUT", "/v1/kv/k5", "v", []string{"Host", "LOCALHOST."}, 200},
		{"Host an IPv6 address", "PUT", "/v1/kv/k6", "v", []string{"Host", "[::1]:" + port}, 200},
		{"Host another address", "PUT", "/v1/kv/k7", "v", []string{"Host", "192.0.2.7:" + port}, 200},
		{"Host a configured name", "PUT", "/v1/kv/k8", "v", []string{"Host", "API.example.com:" + port}, 200},
		{"Host a node's name from the cluster file", "PUT", "/v1/kv/k9", "v", []string{"Host", "node2.internal:9001"}, 200},
	}
	for _, tt := range served {
		before := ws.calls.Load()
		r := do(t, tt.method, base+tt.path, tt.body, tt.hdr...)
		if r.Status != tt.status || ws.calls.Load() == before {
			t.Errorf("%s: got %d %s (store calls %d), want %d and a store call", tt.name, r.Status, r.Body, ws.calls.Load()-before, tt.status)
		}
	}
	// A request with no Host at all (HTTP/1.0) is not a browser's.
	if r, ok := rawReply(t, api.Addr(), "PUT /v1/kv/k10 HTTP/1.0\r\nContent-Length: 1\r\n\r\nv", 0); !ok || r.Status != 200 {
		t.Errorf("HTTP/1.0 without Host: %+v, want 200", r)
	}
}

// TestAPIHostCheckSkippedOverTLS: over TLS a rebound name fails the
// browser's certificate check, so the Host is not checked; the Origin
// check still is.
func TestAPIHostCheckSkippedOverTLS(t *testing.T) {
	t.Parallel()
	cfg, client := testTLS(t)
	_, api := startWatchedAPI(t, cfg)
	t.Cleanup(client.CloseIdleConnections)
	send := func(hdr ...string) int {
		req, _ := http.NewRequest("POST", "https://"+api.Addr()+"/v1/snapshot", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			if hdr[i] == "Host" {
				req.Host = hdr[i+1]
				continue
			}
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := send("Host", "api.example.com"); got != 200 {
		t.Errorf("a name over TLS: %d, want 200", got)
	}
	if got := send("Host", "api.example.com", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); got != 403 {
		t.Errorf("a cross-site request over TLS: %d, want 403", got)
	}
}

// testTLS is a self-signed certificate for 127.0.0.1 as a server config,
// and a client that trusts it.
func testTLS(t *testing.T) (*tls.Config, *http.Client) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "idemgate test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return server, client
}

// TestHostAllowList: which Host values a plaintext API serves.
func TestHostAllowList(t *testing.T) {
	l := newHostAllowList([]string{"api.example.com.", "Node2.Internal:9001", "10.0.0.9:9001", "[::1]:9001", ""})
	if len(l) != 2 || !l["api.example.com"] || !l["node2.internal"] {
		t.Fatalf("newHostAllowList = %v, want the two names, lower case, without the dot", l)
	}
	for _, tt := range []struct {
		host string
		ok   bool
	}{
		{"", true}, {"127.0.0.1", true}, {"127.0.0.1:9001", true}, {"192.0.2.1:80", true},
		{"[::1]:9001", true}, {"[::1]", true}, {"::1", true}, {"[fe80::1%25eth0]:80", true},
		{"localhost", true}, {"localhost:9001", true}, {"LocalHost.:9001", true},
		{"api.example.com:443", true}, {"API.EXAMPLE.COM", true}, {"node2.internal:1", true},
		{"evil.example", false}, {"evil.example:9001", false}, {"api.example.com.evil.example", false},
		{"localhost.evil.example", false}, {"127.0.0.1.nip.io", false}, {"2130706433", false},
		{"localhost:", false}, {"localhost:x", false}, {"[::1", false}, {"[::1]x", false}, {"[::1]:", false},
		{"a:b:c", false},
	} {
		if got := l.allows(tt.host); got != tt.ok {
			t.Errorf("allows(%q) = %v, want %v", tt.host, got, tt.ok)
		}
	}
}

// FuzzHostAllowList: any Host is answered without a panic, and one that a
// name-less list allows is empty, an address or localhost.
func FuzzHostAllowList(f *testing.F) {
	for _, s := range []string{"", "localhost:9001", "[::1]:80", "evil.example", "[::1", "a:b:c", "127.0.0.1:"} {
		f.Add(s)
	}
	l := newHostAllowList(nil)
	f.Fuzz(func(t *testing.T, host string) {
		if !l.allows(host) {
			return
		}
		name, _, ok := splitHostPort(host)
		if !ok {
			t.Fatalf("allows(%q) with an unsplittable host", host)
		}
		if _, err := netip.ParseAddr(name); err != nil && host != "" && strings.TrimSuffix(strings.ToLower(name), ".") != "localhost" {
			t.Fatalf("allows(%q): %q is neither an address nor localhost", host, name)
		}
	})
}
