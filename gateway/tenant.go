package gateway

import (
	"net/netip"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
)

// Tenants from headers. With tenant: header:NAME a route scopes its
// records by a header the client sends, which is only as good as whoever
// sets it: a client that may send X-User-Id: bob with bob's key and body
// gets bob's stored answer replayed. The header must come from the proxy
// in front of the gateway that set it from a credential it checked, so it
// counts only on a connection from TrustedProxies (the peer's address:
// X-Forwarded-For is whatever the client wrote). From anyone else it is
// refused (400 untrusted-tenant) or, with IgnoreUntrustedTenant, dropped,
// so that neither the record nor the upstream acts on it. tenant:
// authorization needs no trust: the tenant is the credential itself.

// untrustedTenant refuses or drops route r's tenant header on a request
// from a client outside TrustedProxies; true: it answered 400.
func (g *Gateway) untrustedTenant(ctx *fasthttp.RequestCtx, r *route) bool {
	if r.tenantHeader == "" || g.trusted(ctx) || len(ctx.Request.Header.PeekAll(r.tenantHeader)) == 0 {
		return false
	}
	if g.cfg.IgnoreUntrustedTenant {
		ctx.Request.Header.Del(r.tenantHeader)
		return false
	}
	httpx.WriteProblem(ctx, httpx.UntrustedTenant, r.tenantHeader+" is this route's tenant, and only a trusted proxy may send it (trusted_proxies); this client's address is not one: send the request through the proxy that sets it")
	return true
}

// trusted reports whether the request's peer is in TrustedProxies.
func (g *Gateway) trusted(ctx *fasthttp.RequestCtx) bool {
	ip, ok := netip.AddrFromSlice(ctx.RemoteIP())
	if !ok {
		return false
	}
	ip = ip.Unmap()
	for _, p := range g.cfg.TrustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
