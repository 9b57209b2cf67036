package gateway

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/memstore"
)

// TestForgedTenant: with tenant: header:X-User-Id, bob's request comes
// through the proxy that sets the header (a gateway that trusts
// loopback); mallory reaches a gateway directly (one that trusts only
// 192.0.2.7, her address is not it) with bob's key, body and
// X-User-Id: bob. She is refused, 400 untrusted-tenant, and never sees
// bob's stored answer; under untrusted_tenant: ignore her header is
// dropped (her own record, no tenant, and the upstream never sees it).
// Without a tenant header, or on a route with no header tenant, a client
// outside trusted_proxies is served: only a tenant header needs the proxy.
func TestForgedTenant(t *testing.T) {
	t.Parallel()
	store := memstore.New(t)
	gc := startGatewaysOver(t, nil, []nodeStore{store}, "")
	upAddr := gc.up.Addr
	direct := startGatewaysOver(t, nil, []nodeStore{store}, upAddr, func(c *Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.7/32")}
	})
	ignoring := startGatewaysOver(t, nil, []nodeStore{store}, upAddr, func(c *Config) {
		c.TrustedProxies, c.IgnoreUntrustedTenant = nil, true
	})
	proxy, mallory, lenient := addrOf(gc.gwURLs[0]), addrOf(direct.gwURLs[0]), addrOf(ignoring.gwURLs[0])
	bob := post("/pay", "Idempotency-Key: order-1\r\nX-User-Id: bob\r\n", `{"amount":100}`)
	status, _, bobBody := rawExchange(t, proxy, bob, 0)
	if status != 201 || !strings.Contains(bobBody, `"user":"bob"`) {
		t.Fatalf("bob through the proxy: %d %s", status, bobBody)
	}
	calls := gc.up.Calls.Load()
	tests := []struct {
		name, addr, raw string
		status          int
		ptype           string
	}{
		{"bob's key, body and tenant, sent directly", mallory, bob, 400, "untrusted-tenant"},
		{"the tenant header empty", mallory, post("/pay", "Idempotency-Key: order-1\r\nX-User-Id: \r\n", `{"amount":100}`), 400, "untrusted-tenant"},
		{"the tenant header in another case", mallory, post("/pay", "Idempotency-Key: order-1\r\nx-user-id: bob\r\n", `{"amount":100}`), 400, "untrusted-tenant"},
		{"two tenant headers", mallory, post("/pay", "Idempotency-Key: order-1\r\nX-User-Id: bob\r\nX-User-Id: eve\r\n", `{"amount":100}`), 400, "untrusted-tenant"},
		{"no key either", mallory, post("/pay", "X-User-Id: bob\r\n", `{"amount":100}`), 400, "untrusted-tenant"},
	}
	for _, tt := range tests {
		status, ptype, body := rawExchange(t, tt.addr, tt.raw, 0)
		if status != tt.status || (tt.ptype != "" && ptype != tt.ptype) || strings.Contains(body, `"user":"bob"`) {
			t.Errorf("%s: got %d %q %s, want %d %s and not bob's answer", tt.name, status, ptype, body, tt.status, tt.ptype)
		}
	}
	if n := gc.up.Calls.Load(); n != calls {
		t.Errorf("forged tenants reached the upstream %d times", n-calls)
	}
	// Served from an untrusted address: no tenant header (one record for
	// every such client, as on a route without tenants), and a tenant from
	// Authorization, which needs no proxy.
	for _, tt := range []struct{ name, raw, want string }{
		{"no tenant header", post("/pay", "Idempotency-Key: order-1\r\n", `{"amount":100}`), `"user":""`},
		{"tenant: authorization", "PUT /orders/1?key=o-1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer bob\r\nContent-Length: 2\r\n\r\n{}", `"key":"o-1"`},
	} {
		status, _, body := rawExchange(t, mallory, tt.raw, 0)
		if status != 201 || !strings.Contains(body, tt.want) || strings.Contains(body, `"user":"bob"`) {
			t.Errorf("%s, directly: %d %s, want 201 with %s", tt.name, status, body, tt.want)
		}
	}
	// untrusted_tenant: ignore: the header is dropped; the request has no
	// tenant (so it replays the record above, not bob's) and the upstream
	// never sees X-User-Id.
	status, _, body := rawExchange(t, lenient, post("/pay", "Idempotency-Key: order-2\r\nX-User-Id: bob\r\n", `{"amount":7}`), 0)
	if status != 201 || !strings.Contains(body, `"user":""`) {
		t.Errorf("ignored tenant header: %d %s, want 201 with no user", status, body)
	}
	status, _, body = rawExchange(t, lenient, bob, 0)
	if status != 201 || strings.Contains(body, `"user":"bob"`) {
		t.Errorf("bob's request, ignored tenant: %d %s, want the no-tenant record's answer, not bob's", status, body)
	}
	if status, _, body := rawExchange(t, proxy, bob, 0); status != 201 || body != bobBody {
		t.Errorf("bob again through the proxy: %d %s, want his first answer replayed", status, body)
	}
}

func addrOf(url string) string { return strings.TrimPrefix(url, "http://") }

// TestTrustedProxies: which peer addresses trusted_proxies lets send a
// tenant header, IPv4-mapped IPv6 peers read as their IPv4 address.
func TestTrustedProxies(t *testing.T) {
	g := &Gateway{cfg: Config{TrustedProxies: []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/24"), netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("192.0.2.7/32")}}}
	for _, tt := range []struct {
		ip      string
		trusted bool
	}{
		{"10.0.0.1", true}, {"10.0.0.255", true}, {"10.0.1.1", false}, {"::ffff:10.0.0.9", true},
		{"2001:db8::1", true}, {"2001:db9::1", false}, {"192.0.2.7", true}, {"192.0.2.8", false},
		{"127.0.0.1", false}, {"::1", false},
	} {
		var ctx fasthttp.RequestCtx
		ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.ParseIP(tt.ip)}, nil)
		if got := g.trusted(&ctx); got != tt.trusted {
			t.Errorf("trusted(%s) = %v, want %v", tt.ip, got, tt.trusted)
		}
	}
	if def := DefaultConfig().TrustedProxies; len(def) != 2 || !def[0].Contains(netip.MustParseAddr("127.1.2.3")) || !def[1].Contains(netip.IPv6Loopback()) {
		t.Errorf("DefaultConfig().TrustedProxies = %v, want loopback", def)
	}
}
