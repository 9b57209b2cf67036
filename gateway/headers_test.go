package gateway

import (
	"bufio"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/internal/httpx"
)

func TestStoredHeadersFilter(t *testing.T) {
	// Parsed as an upstream answer is, as the filter sees it in production.
	raw := "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nX-Charge: ch_1\r\nSet-Cookie: s=1\r\n" +
		"Date: Mon, 30 Nov 2026 09:00:00 GMT\r\nConnection: X-Secret\r\nX-Secret: hop\r\nKeep-Alive: timeout=5\r\n" +
		"Content-Length: 2\r\n\r\nok"
	var resp fasthttp.Response
	if err := resp.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		t.Fatal(err)
	}
	h := &resp.Header
	// fasthttp (>= 1.72) refuses such values when it parses an answer; the
	// filter refuses them again, whatever path they came by.
	h.Set("X-Nul", "a\x00b")
	got, refused := storedHeaders(h, nil, nil)
	names := map[string]string{}
	for _, kv := range got {
		names[string(kv.Name)] = string(kv.Value)
	}
	if refused != 1 {
		t.Errorf("refused = %d, want 1 (the NUL value)", refused)
	}
	for _, keep := range []string{"Content-Type", "X-Charge"} {
		if _, ok := names[keep]; !ok {
			t.Errorf("%s not stored: %v", keep, names)
		}
	}
	for _, drop := range []string{"Set-Cookie", "Date", "Connection", "X-Secret", "Keep-Alive", "Transfer-Encoding", "X-Nul"} {
		if _, ok := names[drop]; ok {
			t.Errorf("%s stored: %v", drop, names)
		}
	}
	got, _ = storedHeaders(h, map[string]bool{"set-cookie": true, "date": true}, nil)
	n := 0
	for _, kv := range got {
		if string(kv.Name) == "Set-Cookie" || string(kv.Name) == "Date" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("allowed Set-Cookie and Date not stored: %q", got)
	}
}

func FuzzStoredHeaders(f *testing.F) {
	f.Add("X-A", "b", "Connection", "X-A")
	f.Add("Set-Cookie", "a\r\nb", "Date", "x")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		var h fasthttp.ResponseHeader
		h.Set(k1, v1)
		h.Set(k2, v2)
		got, _ := storedHeaders(&h, map[string]bool{"set-cookie": true}, nil)
		for _, kv := range got {
			for _, c := range append(append([]byte(nil), kv.Name...), kv.Value...) {
				if c == '\r' || c == '\n' || c == 0 {
					t.Fatalf("stored a header with CR, LF or NUL: %q: %q", kv.Name, kv.Value)
				}
			}
			if isHopByHop(kv.Name) {
				t.Fatalf("stored hop-by-hop header %q", kv.Name)
			}
		}
	})
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"order-1", `"order-1"`, `"a\"b"`, `"\\"`, "", `"`, "a b", `"abc`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		k, err := httpx.ParseKey(raw)
		if err != nil {
			return
		}
		if len(k) == 0 || len(k) > httpx.MaxClientKeyLen {
			t.Fatalf("httpx.ParseKey(%q) = %q: bad length", raw, k)
		}
		for _, c := range k {
			if c < 0x21 || c > 0x7e {
				t.Fatalf("httpx.ParseKey(%q) = %q: not visible ASCII", raw, k)
			}
		}
	})
}

// FuzzFingerprint: any request hashes without panic, and any change of
// method, path, query or body changes the fingerprint.
func FuzzFingerprint(f *testing.F) {
	f.Add("POST", "/pay", "a=1", []byte(`{"amount":1}`), byte(0))
	f.Fuzz(func(t *testing.T, method, path, query string, body []byte, which byte) {
		fp, digest := fingerprint([]byte(method), []byte(path), nil, []byte(query), body)
		m, p, q, b := method, path, query, append([]byte(nil), body...)
		switch which % 4 {
		case 0:
			m += "X"
		case 1:
			p += "/"
		case 2:
			q += "&"
		default:
			b = append(b, 'x')
		}
		fp2, digest2 := fingerprint([]byte(m), []byte(p), nil, []byte(q), b)
		if fp == fp2 {
			t.Fatalf("fingerprint unchanged by a change of the request (%d)", which%4)
		}
		if (which%4 == 3) == (digest == digest2) {
			t.Fatalf("body digest changed %v, body changed %v", digest != digest2, which%4 == 3)
		}
	})
}

// TestMatchRouteOrder: the first route a request names, in any spelling,
// decides; a later route that the request names exactly does not take an
// alias of an earlier one (a catch-all would otherwise take /PAY with its
// own rules, when the upstream serves it as /pay).
func TestMatchRouteOrder(t *testing.T) {
	file, err := config.Parse([]byte(`nodes:
  - {id: n1, raft: "127.0.0.1:1", api: "127.0.0.1:2", listen: "127.0.0.1:3"}
upstream: http://127.0.0.1:4
routes:
  - {name: pay, path: /pay, tenant: "header:X-User-Id", token: required}
  - {name: loose, path: /loose, match: case-insensitive}
  - {name: all, methods: [POST], path: "/*"}
`))
	if err != nil {
		t.Fatal(err)
	}
	routes, err := compileRoutes(file.Routes)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, uri, route string
		refused            bool
	}{
		{"POST", "/pay", "pay", false},
		{"POST", "/PAY", "pay", true},
		{"POST", "/pay/", "pay", true},
		{"POST", "/p%61y", "pay", true},
		{"POST", "/LOOSE", "loose", false},
		{"POST", "/other", "all", false},
		{"POST", "/other/a%20b", "all", false},
		{"GET", "/pay", "", false},
	}
	for _, tt := range tests {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(tt.method)
		ctx.Request.SetRequestURI(tt.uri)
		got, why := matchRoute(routes, &ctx)
		name := ""
		if got.r != nil {
			name = got.r.name
		}
		if name != tt.route || (why != "") != tt.refused {
			t.Errorf("%s %s: route %q refused %q; want route %q refused=%v", tt.method, tt.uri, name, why, tt.route, tt.refused)
		}
	}
}
