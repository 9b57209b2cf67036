package gateway

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func post(path, headers, body string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + headers + "Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body
}

func itoa(n int) string { return strconv.Itoa(n) }

// chunked is a POST with a chunked body of "{}" and the given trailer
// section.
func chunked(path, headers, trailer string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + headers + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n" + trailer + "\r\n"
}

// TestHostileRequests: malformed and hostile requests each
// get the exact answer below, and none reaches the upstream; those of the
// second table are valid but for a trailer or a Connection header, and
// reach it once each, with what the gateway reads and sets intact.
func TestHostileRequests(t *testing.T) {
	t.Parallel()
	gc := startGateways(t, 1)
	addr := strings.TrimPrefix(gc.gwURLs[0], "http://")
	long := strings.Repeat("k", 256)
	type hostileCase struct {
		name   string
		raw    string
		pause  time.Duration
		status int
		ptype  string
	}
	tests := []hostileCase{
		{"no key", post("/pay", "", "{}"), 0, 400, "missing-key"},
		{"empty key", post("/pay", "Idempotency-Key: \r\n", "{}"), 0, 400, "invalid-key"},
		{"key of 256 chars", post("/pay", "Idempotency-Key: "+long+"\r\n", "{}"), 0, 400, "invalid-key"},
		{"key with a space", post("/pay", "Idempotency-Key: a b\r\n", "{}"), 0, 400, "invalid-key"},
		{"key with UTF-8", post("/pay", "Idempotency-Key: caf\xc3\xa9\r\n", "{}"), 0, 400, "invalid-key"},
		{"key with DEL", post("/pay", "Idempotency-Key: a\x7fb\r\n", "{}"), 0, 400, "bad-request"},
		{"key with a control byte", post("/pay", "Idempotency-Key: a\x01b\r\n", "{}"), 0, 400, ""},
		{"key with NUL", post("/pay", "Idempotency-Key: a\x00b\r\n", "{}"), 0, 400, ""},
		{"two key headers", post("/pay", "Idempotency-Key: a\r\nIdempotency-Key: b\r\n", "{}"), 0, 400, "invalid-key"},
		{"two key headers, same value", post("/pay", "Idempotency-Key: a\r\nIdempotency-Key: a\r\n", "{}"), 0, 400, "invalid-key"},
		{"unterminated sf-string", post("/pay", "Idempotency-Key: \"abc\r\n", "{}"), 0, 400, "invalid-key"},
		{"sf-string bad escape", post("/pay", "Idempotency-Key: \"a\\b\"\r\n", "{}"), 0, 400, "invalid-key"},
		{"empty sf-string", post("/pay", "Idempotency-Key: \"\"\r\n", "{}"), 0, 400, "invalid-key"},
		{"sf-string inner quote", post("/pay", "Idempotency-Key: \"a\"b\"\r\n", "{}"), 0, 400, "invalid-key"},
		{"sf-string with only a space", post("/pay", "Idempotency-Key: \" \"\r\n", "{}"), 0, 400, "invalid-key"},
		{"two key query params", post("/orders/1?key=a&key=b", "", "{}"), 0, 400, "invalid-key"},
		{"empty key query param", post("/orders/1?key=", "", "{}"), 0, 400, "invalid-key"},
		{"no key query param", post("/orders/1", "", "{}"), 0, 400, "missing-key"},
		{"tenant with a control byte", post("/pay", "Idempotency-Key: k\r\nX-User-Id: a\x01b\r\n", "{}"), 0, 400, ""},
		{"missing form token", post("/form", "Idempotency-Key: k\r\n", "{}"), 0, 400, "missing-token"},
		{"garbage form token", post("/form", "Idempotency-Key: k\r\nForm-Token: nope\r\n", "{}"), 0, 400, "invalid-token"},
		{"tenant header of 1,100 bytes", post("/pay", "Idempotency-Key: k\r\nX-User-Id: "+strings.Repeat("t", 1100)+"\r\n", "{}"), 0, 400, "bad-request"},
		{"unknown form token", post("/form", "Idempotency-Key: k\r\nForm-Token: 6f1c1b2e-1111-4222-8333-444455556666\r\n", "{}"), 0, 409, "token-used"},
		// Bodies are streamed: the answer comes once the first 8 KiB are in.
		{"body over the limit", "POST /pay HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\nContent-Length: 1073741824\r\n\r\n" + strings.Repeat("x", 16<<10), 0, 413, "body-too-large"},
		{"chunked body over the limit", "POST /pay HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat("4000\r\n"+strings.Repeat("x", 16<<10)+"\r\n", 5) + "0\r\n\r\n", 0, 413, "body-too-large"},
		{"headers over the limit", "POST /pay HTTP/1.1\r\nHost: x\r\nX-Junk: " + strings.Repeat("j", 8<<10) + "\r\n\r\n", 0, 431, ""},
		{"Transfer-Encoding and Content-Length", "POST /pay HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0, 400, "bad-request"},
		{"Content-Length then Transfer-Encoding, other case", "POST /anything HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n0\r\n\r\n", 0, 400, "bad-request"},
		{"bad Content-Length", "POST /pay HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\nContent-Length: abc\r\n\r\n", 0, 400, ""},
		{"negative Content-Length", "POST /pay HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\nContent-Length: -5\r\n\r\n", 0, 400, ""},
		{"bad chunk size", "POST /pay HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", 0, 400, ""},
		{"garbage request line", "GARBAGE\r\n\r\n", 0, 400, ""},
		{"header without colon", "POST /pay HTTP/1.1\r\nHost: x\r\nIdempotency-Key k\r\n\r\n", 0, 400, ""},
		{"space before colon", "POST /pay HTTP/1.1\r\nHost: x\r\nIdempotency-Key : k\r\nContent-Length: 0\r\n\r\n", 0, 400, ""},
		{"token endpoint with GET", "GET /_idem/tokens?scope=pay HTTP/1.1\r\nHost: x\r\n\r\n", 0, 405, "method-not-allowed"},
		{"token endpoint bad scope", post("/_idem/tokens?scope=a%20b", "", ""), 0, 400, "invalid-scope"},
		{"token endpoint bad ttl", post("/_idem/tokens?scope=form&ttl=forever", "", ""), 0, 400, "invalid-ttl"},
		{"token endpoint, a scope no route takes tokens in", post("/_idem/tokens?scope=pay", "", ""), 0, 400, "invalid-scope"},
		{"token endpoint, a made-up scope", post("/_idem/tokens?scope=f00dfacef00dface", "", ""), 0, 400, "invalid-scope"},
		{"token endpoint, a month-long ttl", post("/_idem/tokens?scope=form&ttl=720h", "", ""), 0, 400, "invalid-ttl"},
		// Key, tenant and form token count only as header fields: not in a
		// trailer, not twice, not named hop-by-hop by Connection.
		{"key only in a trailer", chunked("/pay", "Trailer: Idempotency-Key\r\n", "Idempotency-Key: t1\r\n"), 0, 400, "missing-key"},
		{"key only in an unannounced trailer", chunked("/pay", "", "Idempotency-Key: t1\r\n"), 0, 400, "missing-key"},
		{"form token only in a trailer", chunked("/form", "Idempotency-Key: t2\r\nTrailer: Form-Token\r\n", "Form-Token: 6f1c1b2e-1111-4222-8333-444455556666\r\n"), 0, 400, "missing-token"},
		{"two tenant headers", post("/pay", "Idempotency-Key: k\r\nX-User-Id: alice\r\nX-User-Id: bob\r\n", "{}"), 0, 400, "bad-request"},
		{"two tenant headers, same value, other case", post("/pay", "Idempotency-Key: k\r\nX-User-Id: alice\r\nx-user-id: alice\r\n", "{}"), 0, 400, "bad-request"},
		{"two Authorization headers on an authorization tenant", "PUT /orders/1?key=k HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\nContent-Length: 2\r\n\r\n{}", 0, 400, "bad-request"},
		{"Connection names the key and tenant headers", post("/pay", "Idempotency-Key: k\r\nX-User-Id: alice\r\nConnection: Idempotency-Key, X-User-Id\r\n", "{}"), 0, 400, "bad-request"},
		{"Connection names the tenant header, in lower case", post("/pay", "Idempotency-Key: k\r\nX-User-Id: alice\r\nConnection: close, x-user-id\r\n", "{}"), 0, 400, "bad-request"},
		{"a second Connection header names the key header", post("/pay", "Idempotency-Key: k\r\nConnection: keep-alive\r\nConnection: Idempotency-Key\r\n", "{}"), 0, 400, "bad-request"},
		{"Connection names Authorization on an authorization tenant", "PUT /orders/1?key=k HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nConnection: Authorization\r\nContent-Length: 2\r\n\r\n{}", 0, 400, "bad-request"},
		{"slowloris", "POST /pay HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\nX-Slow: ", 3 * time.Second, 0, ""},
	}
	// Aliases of a protected route (POST /pay, match: exact, trailing_slash:
	// strict) that an upstream may serve as the route: each is refused with
	// 400 ambiguous-path, never passed through without the key and token
	// checks.
	withKey := func(path string) string { return post(path, "Idempotency-Key: k\r\n", "{}") }
	for _, a := range []struct{ name, raw string }{
		{"path in upper case", withKey("/PAY")},
		{"path in mixed case", withKey("/Pay")},
		{"path with a trailing slash", withKey("/pay/")},
		{"matrix parameter", withKey("/pay;x=1")},
		{"matrix parameter after a slash", withKey("/pay/;x=1")},
		{"matrix parameter on an earlier segment", withKey("/a;b/../pay")},
		{"percent-encoded letter", withKey("/p%61y")},
		{"percent-encoded first letter, upper-case hex", withKey("/%70ay")},
		{"percent-encoded slash", withKey("/pay%2F")},
		{"dot-dot segment", withKey("/x/../pay")},
		{"dot segment", withKey("/./pay")},
		{"encoded dot-dot segment", withKey("/x/%2e%2e/pay")},
		{"duplicate slashes", withKey("//pay")},
		{"duplicate slashes at the end", withKey("/pay//")},
		{"lowercase method", "post /pay HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\nContent-Length: 2\r\n\r\n{}"},
		{"mixed-case method", "Post /pay HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\nContent-Length: 2\r\n\r\n{}"},
		{"X-HTTP-Method-Override: POST on GET", "GET /pay HTTP/1.1\r\nHost: x\r\nX-HTTP-Method-Override: POST\r\n\r\n"},
		{"X-HTTP-Method: POST on PUT", "PUT /pay HTTP/1.1\r\nHost: x\r\nX-HTTP-Method: POST\r\nContent-Length: 2\r\n\r\n{}"},
		{"X-Method-Override: post on DELETE", "DELETE /pay HTTP/1.1\r\nHost: x\r\nX-Method-Override: post\r\n\r\n"},
		{"method override in a list, on an alias of the path", "GET /PAY/ HTTP/1.1\r\nHost: x\r\nX-HTTP-Method-Override: GET, POST\r\n\r\n"},
		{"method override on a protected route, naming its other method", "POST /orders/1?key=k HTTP/1.1\r\nHost: x\r\nX-HTTP-Method-Override: PUT\r\nContent-Length: 2\r\n\r\n{}"},
		{"prefix route in upper case", "PUT /ORDERS/1?key=k HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"},
		{"prefix route without its slash", post("/orders?key=k", "", "{}")},
		{"prefix route left by a matrix dot-dot segment", withKey("/orders/..;/pay")},
		{"prefix route left by an encoded dot-dot segment", post("/orders/%2e%2e/x?key=k", "", "{}")},
		{"another route behind an escaped prefix route", withKey("/items/%2e%2e/pay")},
		{"route that takes case and slash aliases, with a matrix parameter", withKey("/loose;x=1")},
		{"route that takes case and slash aliases, percent-encoded", withKey("/l%6Fose")},
	} {
		tests = append(tests, hostileCase{a.name, a.raw, 0, 400, "ambiguous-path"})
	}
	if len(tests) < 30 {
		t.Fatalf("the table must hold at least 30 cases, has %d", len(tests))
	}
	for _, tt := range tests {
		status, ptype, _ := rawExchange(t, addr, tt.raw, tt.pause)
		if tt.status == 0 {
			// Slowloris: closed, or answered 408 once the read timeout hits.
			if status != 0 && status != 408 {
				t.Errorf("%s: got %d, want the connection closed or 408", tt.name, status)
			}
			continue
		}
		if status != tt.status || (tt.ptype != "" && ptype != tt.ptype) {
			t.Errorf("%s: got %d %q, want %d %q", tt.name, status, ptype, tt.status, tt.ptype)
		}
	}
	if n := gc.up.Calls.Load(); n != 0 {
		t.Errorf("hostile requests reached the upstream %d times", n)
	}
	// These are forwarded, once each, without what came in their trailer
	// and with the headers the gateway sets whatever Connection names: the
	// upstream's echo shows the key and tenant it saw as headers.
	forwarded := []struct {
		name, raw string
		status    int
		bodyHas   string
	}{
		{"tenant only in a trailer", chunked("/pay", "Idempotency-Key: kt1\r\nTrailer: X-User-Id\r\n", "X-User-Id: mallory\r\n"), 201, `"key":"kt1","user":""`},
		{"the same key with that tenant as a header: another record", post("/pay", "Idempotency-Key: kt1\r\nX-User-Id: mallory\r\n", "{}"), 201, `"key":"kt1","user":"mallory"`},
		{"key in the header and another in a trailer", chunked("/pay", "Idempotency-Key: kt2\r\nX-User-Id: u\r\nTrailer: Idempotency-Key\r\n", "Idempotency-Key: kt3\r\n"), 201, `"key":"kt2","user":"u"`},
		{"tenant in an unannounced trailer, beside the header", chunked("/pay", "Idempotency-Key: kt4\r\nX-User-Id: u\r\n", "X-User-Id: mallory\r\n"), 201, `"key":"kt4","user":"u"`},
		{"Connection names Idempotency-Key on a route keyed by the query", "PUT /orders/2?key=kc1 HTTP/1.1\r\nHost: x\r\nConnection: Idempotency-Key\r\nContent-Length: 2\r\n\r\n{}", 201, `"key":"kc1"`},
	}
	for _, tt := range forwarded {
		before := gc.up.Calls.Load()
		status, _, body := rawExchange(t, addr, tt.raw, 0)
		if n := gc.up.Calls.Load() - before; status != tt.status || !strings.Contains(body, tt.bodyHas) || n != 1 {
			t.Errorf("%s: got %d %s with %d upstream calls, want %d with %s and 1 call", tt.name, status, body, n, tt.status, tt.bodyHas)
		}
	}
}
