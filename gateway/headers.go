package gateway

import (
	"bytes"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/fsm"
)

// hopByHop are the headers that concern one connection only (RFC 9110
// 7.6.1); they are never forwarded, stored or replayed.
var hopByHop = config.HopByHopHeaders

// notStored are dropped from stored responses unless a route's
// replay_headers names them: cookies belong to one client, Date to one
// moment, Content-Length is recomputed on every answer.
var notStored = map[string]bool{"set-cookie": true, "date": true, "content-length": true}

func isHopByHop(name []byte) bool {
	for _, h := range hopByHop {
		if len(name) == len(h) && strings.EqualFold(string(name), h) {
			return true
		}
	}
	return false
}

// storedHeaders picks the upstream response headers to store and replay:
// no hop-by-hop headers, none named in Connection, no Set-Cookie or Date
// unless allowed, none the route drops, and never a value with CR, LF or
// NUL (refused: a stored header is written to every later client).
func storedHeaders(h *fasthttp.ResponseHeader, allow, drop map[string]bool) (out []fsm.Header, refused int) {
	named := connectionNamed(h)
	for name, value := range h.All() {
		lower := strings.ToLower(string(name))
		switch {
		case isHopByHop(name):
			continue
		case notStored[lower] && !allow[lower], drop[lower]:
			continue
		case listed(named, name):
			continue
		case bytes.ContainsAny(value, "\r\n\x00") || bytes.ContainsAny(name, "\r\n\x00"):
			refused++
			continue
		}
		out = append(out, fsm.Header{Name: append([]byte(nil), name...), Value: append([]byte(nil), value...)})
	}
	return out, refused
}

// connectionNamed returns the names an answer's Connection fields list
// (RFC 9110 7.6.1), from every Connection field, whatever the case of its
// name: the upstream client keeps header names as they came (it does not
// normalize them), so Peek("Connection") would miss "connection", and
// answers only the first of several.
func connectionNamed(h *fasthttp.ResponseHeader) [][]byte {
	var named [][]byte
	for name, value := range h.All() {
		if !strings.EqualFold(string(name), fasthttp.HeaderConnection) {
			continue
		}
		for len(value) > 0 {
			var elem []byte
			if elem, value = nextElement(value); len(elem) > 0 {
				named = append(named, bytes.Clone(elem))
			}
		}
	}
	return named
}

// listed reports whether name is in names, whatever the case.
func listed(names [][]byte, name []byte) bool {
	for _, n := range names {
		if bytes.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// stripHopByHop removes hop-by-hop headers from a request about to be
// forwarded, and those its Connection header names.
func stripHopByHop(h *fasthttp.RequestHeader) {
	if conn := h.Peek("Connection"); len(conn) > 0 {
		for _, part := range bytes.Split(append([]byte(nil), conn...), []byte(",")) {
			if name := bytes.TrimSpace(part); len(name) > 0 {
				h.DelBytes(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

// dropTrailers discards a request's trailer fields, as RFC 9112 7.1.2 lets
// a recipient that removes the chunked coding do (the gateway reads the
// whole body and forwards it with a Content-Length). fasthttp keeps them
// beside the header fields, announced by Trailer or not: Peek and PeekAll
// answer from them, and deleting the Trailer header (hop-by-hop stripping
// does) merges them into the header section. Either way a key, tenant or
// form token sent after the body would count as a header, for the record
// and for the upstream. Values the header section itself holds under an
// announced name are kept. A request without trailers costs one check.
func dropTrailers(h *fasthttp.RequestHeader) {
	names := h.PeekTrailerKeys()
	if len(names) == 0 {
		return
	}
	var gone [][]byte
	for _, n := range names {
		gone = append(gone, bytes.Clone(n))
	}
	var kept []fsm.Header
	for name, value := range h.All() {
		for _, n := range gone {
			if bytes.Equal(name, n) {
				kept = append(kept, fsm.Header{Name: bytes.Clone(name), Value: bytes.Clone(value)})
				break
			}
		}
	}
	for _, n := range gone {
		h.DelBytes(n) // from both sections
	}
	h.Del(fasthttp.HeaderTrailer) // nothing left to merge back
	for _, kv := range kept {
		h.AddBytesKV(kv.Name, kv.Value)
	}
}

// hopByHopNamed returns a header the route reads (its key header, its
// tenant header, Authorization for tenant: authorization) that a Connection
// header names, or "". Such a header would be stripped before the upstream
// (RFC 9110 7.6.1) after the gateway scoped the record by it: the upstream
// would act on a request, for a tenant, other than the one recorded.
func (r *route) hopByHopNamed(h *fasthttp.RequestHeader) string {
	for _, conn := range h.PeekAll("Connection") {
		for len(conn) > 0 {
			var name []byte
			name, conn = nextElement(conn)
			for _, read := range [...]string{r.headerKeyName(), r.tenantHeader, r.authHeader()} {
				if read != "" && len(name) == len(read) && hasPrefixFold(name, read) {
					return read
				}
			}
		}
	}
	return ""
}

// nextElement splits the first element off a comma-separated header value
// (RFC 9110 5.6.1), trimmed of spaces, without allocating.
func nextElement(list []byte) (elem, rest []byte) {
	elem = list
	if i := bytes.IndexByte(list, ','); i >= 0 {
		elem, rest = list[:i], list[i+1:]
	}
	return bytes.TrimSpace(elem), rest
}

func (r *route) headerKeyName() string {
	if r.keyQuery {
		return ""
	}
	return r.keyName
}

func (r *route) authHeader() string {
	if r.tenantAuth {
		return "Authorization"
	}
	return ""
}

// stripResponseHopByHop removes hop-by-hop headers from an upstream answer
// before it is relayed to the client or stored: the standard set and those
// its Connection fields name, in whatever case each came (the upstream
// client keeps names as sent, and a delete matches its name exactly).
// Content-Length is never removed: the gateway frames its own answers.
func stripResponseHopByHop(h *fasthttp.ResponseHeader) {
	named := connectionNamed(h)
	var gone [][]byte
	for name := range h.All() {
		if (isHopByHop(name) || listed(named, name)) && !strings.EqualFold(string(name), fasthttp.HeaderContentLength) &&
			!slices.ContainsFunc(gone, func(g []byte) bool { return bytes.Equal(g, name) }) {
			gone = append(gone, bytes.Clone(name))
		}
	}
	for _, name := range gone {
		h.DelBytes(name)
	}
	h.ResetConnectionClose()
}

// Details of the requests whose framing the gateway refuses (RFC 9112 6.3:
// 400, and the connection closed).
const (
	detailSmuggled   = "both Transfer-Encoding and Content-Length were sent (RFC 9112 6.3: a request smuggling attempt)"
	detailBadCoding  = "a Transfer-Encoding other than chunked was sent (RFC 9112 6.3: only chunked frames a request's body)"
	transferEncoding = "transfer-encoding:"
)

// badFraming returns why a request's raw header block leaves its body's
// framing in doubt, or "": Transfer-Encoding beside Content-Length, or a
// Transfer-Encoding other than chunked alone. fasthttp lets chunked win
// over Content-Length and then rewrites both headers, and it takes
// "identity" as no coding at all and drops the header (a body then reads
// as empty, and what follows as the next request), so only the raw block
// shows either. It allocates nothing.
func badFraming(raw []byte) string {
	te, cl, coding := false, false, true
	for len(raw) > 0 {
		line := raw
		i := bytes.IndexByte(raw, '\n')
		if i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		switch {
		case hasPrefixFold(line, transferEncoding):
			te = true
			v := bytes.TrimSpace(line[len(transferEncoding):])
			coding = coding && len(v) == len("chunked") && hasPrefixFold(v, "chunked")
		case hasPrefixFold(line, "content-length:"):
			cl = true
		}
	}
	switch {
	case te && cl:
		return detailSmuggled
	case te && !coding:
		return detailBadCoding
	}
	return ""
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && strings.EqualFold(string(b[:len(prefix)]), prefix)
}

// writeStored writes a stored response: status, the stored headers, the
// body. The server adds its own Date and Content-Length.
func writeStored(resp *fasthttp.Response, e *cached) {
	resp.SetStatusCode(e.status)
	for _, h := range e.headers {
		resp.Header.AddBytesKV(h.Name, h.Value)
	}
	resp.SetBody(e.body)
}
