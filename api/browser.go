package api

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
)

// Requests a web page makes. The API keeps no cookies, yet a page can make
// its visitor's browser call it: a form post or a no-cors fetch to
// http://127.0.0.1:9001 (a cross-site request, sent without asking, answers
// unread but acted on: POST /v1/snapshot, promote, a text/plain body), or,
// by DNS rebinding, a fetch to the page's own name once that name resolves
// to the node's address: same-origin to the browser, so it reads the
// answers too, on a cluster without tokens everything. Two checks, made
// before the token check, keep both out and let every other client through:
//
//   - Host. On a plaintext listener the Host a request names must be an IP
//     address, localhost, or a name the node is configured with (the
//     cluster file's API addresses, api.hosts): a rebound page sends its
//     own name. This is etcd's --host-whitelist (421 Misdirected Request),
//     kubectl proxy's --accept-hosts and Jupyter's local_hostnames. Over
//     TLS the browser refuses the rebound name's certificate before a
//     request is sent, and the check is not needed (etcd skips it too).
//   - Origin. A request a browser marks as coming from another site
//     (Sec-Fetch-Site: cross-site or same-site, which every browser sends
//     since 2023; from an older one, an Origin whose host is not the Host)
//     is refused (403), whatever its method or body: the rule of Go's
//     net/http CrossOriginProtection, applied to reads as well, since the
//     API serves no page that could need them. Requests that carry neither
//     header are not a browser's: curl, Go and every other client, which
//     therefore need no new header (curl's --data-binary to /v1/kv included,
//     sent as a form type).

// hostAllowList is the host names a plaintext API accepts in Host beside
// IP addresses and localhost: lower case, without a trailing dot.
type hostAllowList map[string]bool

// newHostAllowList reads names as the config gives them: host names, or
// host:port addresses (whose host counts).
func newHostAllowList(names []string) hostAllowList {
	l := hostAllowList{}
	for _, n := range names {
		if h, _, ok := splitHostPort(n); ok {
			n = h
		}
		if _, err := netip.ParseAddr(n); err == nil || n == "" {
			continue
		}
		l[strings.TrimSuffix(strings.ToLower(n), ".")] = true
	}
	return l
}

// allows reports whether a request naming host (the Host header: a name or
// an address, with a port or not) may be served. No Host at all (HTTP/1.0)
// is not a browser's.
func (l hostAllowList) allows(host string) bool {
	if host == "" {
		return true
	}
	name, _, ok := splitHostPort(host)
	if !ok {
		return false
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return true // an address cannot be rebound
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	return name == "localhost" || l[name]
}

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port"; false
// for anything else (a port that is not digits, an unclosed bracket).
func splitHostPort(s string) (host, port string, ok bool) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", false
		}
		host, rest := s[1:end], s[end+1:]
		if rest == "" {
			return host, "", true
		}
		if rest[0] != ':' || !digits(rest[1:]) {
			return "", "", false
		}
		return host, rest[1:], true
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		if strings.IndexByte(s[:i], ':') >= 0 { // a bare v6 address: no port
			return s, "", true
		}
		if !digits(s[i+1:]) {
			return "", "", false
		}
		return s[:i], s[i+1:], true
	}
	return s, "", true
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// fromBrowser refuses what a web page made a browser send (see above),
// answering 421 or 403; true lets the request through.
func (a *API) fromBrowser(ctx *fasthttp.RequestCtx) bool {
	h := &ctx.Request.Header
	if !ctx.IsTLS() {
		if host := string(h.Host()); !a.hosts.allows(host) {
			httpx.WriteProblem(ctx, httpx.Misdirected, fmt.Sprintf(
				"Host %.100q is not one of this node's names: call the API by an address, localhost, or a name in the cluster file (nodes[].api, api.hosts)", host))
			return false
		}
	}
	switch site := string(h.Peek("Sec-Fetch-Site")); site {
	case "", "same-origin", "none": // none: typed in the address bar
	default:
		httpx.WriteProblem(ctx, httpx.CrossOrigin, fmt.Sprintf(
			"a browser sent this from a page of another site (Sec-Fetch-Site: %.32q): the API takes no requests from web pages", site))
		return false
	}
	if origin := h.Peek("Origin"); len(origin) > 0 {
		if u, err := url.Parse(string(origin)); err != nil || !strings.EqualFold(u.Host, string(h.Host())) {
			httpx.WriteProblem(ctx, httpx.CrossOrigin, fmt.Sprintf(
				"a browser sent this from a page of another origin (Origin: %.100q): the API takes no requests from web pages", origin))
			return false
		}
	}
	return true
}

// noForm refuses a POST of a form's type (415); true lets it through. A
// browser too old to send Origin or Sec-Fetch-Site (Firefox before 70 sent
// no Origin with a form post) still sends a form's type: no endpoint of
// the API takes a form, and a form can send no other type. The JSON
// endpoints would refuse it too; this covers the bodiless ones (snapshot,
// promote). PUT and DELETE cannot come from a form at all. It runs after
// the token check: without a token nothing is said about the body.
func (a *API) noForm(ctx *fasthttp.RequestCtx) bool {
	if ctx.IsPost() && formType(ctx.Request.Header.ContentType()) {
		httpx.WriteProblem(ctx, httpx.UnsupportedMediaType, fmt.Sprintf(
			"Content-Type %.100q is a form's: no API endpoint takes a form (send JSON, or no body)", ctx.Request.Header.ContentType()))
		return false
	}
	return true
}

// formType reports whether ct is one of the types an HTML form sends.
func formType(ct []byte) bool {
	mt, _, _ := strings.Cut(string(ct), ";")
	switch strings.ToLower(strings.TrimSpace(mt)) {
	case "application/x-www-form-urlencoded", "multipart/form-data", "text/plain":
		return true
	}
	return false
}
