package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestUpstreamHopByHopHeaders: a real upstream on loopback answers with
// hop-by-hop headers (RFC 9110 7.6.1): the standard set, and those its
// Connection header names, in any case, in any of several Connection
// fields. None reaches the client, on the first answer or on its replay,
// and the upstream's other headers do, on both.
func TestUpstreamHopByHopHeaders(t *testing.T) {
	t.Parallel()
	const body = `{"ok":true}`
	for i, tc := range []struct {
		name    string
		headers string // the upstream's, besides X-Charge and Content-Length
		gone    []string
	}{
		{"Connection names a header", "Connection: X-Secret\r\nX-Secret: hop\r\n", []string{"X-Secret"}},
		{"Connection names two, lower case", "connection: x-secret, x-other\r\nx-secret: hop\r\nX-Other: hop\r\n", []string{"X-Secret", "X-Other"}},
		{"a second Connection field names it", "Connection: keep-alive\r\nConnection: X-Secret\r\nX-Secret: hop\r\n", []string{"X-Secret"}},
		{"Connection with close names it", "Connection: close, X-Secret\r\nX-Secret: hop\r\n", []string{"X-Secret"}},
		{"Connection names it in another case", "Connection: X-SECRET\r\nx-Secret: hop\r\n", []string{"X-Secret"}},
		{"Connection names it, odd spaces", "Connection: ,  X-Secret ,\t,keep-alive\r\nX-Secret: hop\r\n", []string{"X-Secret"}},
		{"Keep-Alive", "Keep-Alive: timeout=5\r\n", []string{"Keep-Alive"}},
		{"keep-alive, lower case", "keep-alive: timeout=5\r\n", []string{"Keep-Alive"}},
		{"Proxy-Connection, lower case", "proxy-connection: keep-alive\r\n", []string{"Proxy-Connection"}},
		{"Proxy-Authenticate", "Proxy-Authenticate: Basic realm=x\r\nproxy-authenticate: Basic realm=y\r\n", []string{"Proxy-Authenticate"}},
		{"Proxy-Authorization", "PROXY-AUTHORIZATION: Basic eDp5\r\n", []string{"Proxy-Authorization"}},
		{"TE", "te: trailers\r\n", []string{"Te"}},
		{"Upgrade", "upgrade: h2c\r\n", []string{"Upgrade"}},
	} {
		up := rawUpstream(t, "HTTP/1.1 201 Created\r\nX-Charge: ch_1\r\n"+tc.headers+"Content-Length: 11\r\n\r\n"+body)
		gc := startGatewaysOver(t, nil, []nodeStore{memstore.New(t)}, up)
		key := "hop-" + itoa(i)
		for _, pass := range []string{"first answer", "replay"} {
			r, err := testsupport.Do("POST", gc.gwURLs[0]+"/pay", "{}", "Idempotency-Key", key, "X-User-Id", "u1")
			if err != nil {
				t.Fatalf("%s, %s: %v", tc.name, pass, err)
			}
			if r.Status != 201 || r.Body != body || r.Header.Get("X-Charge") != "ch_1" ||
				(pass == "replay") != (r.Header.Get("Idempotent-Replayed") == "true") {
				t.Fatalf("%s, %s: %d %q %v", tc.name, pass, r.Status, r.Body, r.Header)
			}
			for _, name := range tc.gone {
				if v, ok := r.Header[http.CanonicalHeaderKey(name)]; ok {
					t.Errorf("%s, %s: %s: %q reached the client", tc.name, pass, name, v)
				}
			}
			for _, v := range r.Header.Values("Connection") {
				if !strings.EqualFold(v, "close") && !strings.EqualFold(v, "keep-alive") {
					t.Errorf("%s, %s: Connection: %q reached the client", tc.name, pass, v)
				}
			}
		}
	}
}
