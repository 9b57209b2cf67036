package gateway

import (
	"bytes"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/config"
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
func storedHeaders(h *fasthttp.ResponseHeader, allow, drop map[string]bool) (out []command.Header, refused int) {
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
		out = append(out, command.Header{Name: append([]byte(nil), name...), Value: append([]byte(nil), value...)})
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

// hopByHopNamed returns a header the route reads (its key header, its
// tenant header, Authorization for tenant: authorization and bearer JWTs)
// that a Connection header names, or "". Such a header would be stripped
// before the upstream (RFC 9110 7.6.1) after the gateway scoped the record
// by it: the upstream would act on a request, for a tenant, other than the
// one recorded.
func (r *route) hopByHopNamed(h *fasthttp.RequestHeader) string {
	for _, conn := range h.PeekAll("Connection") {
		for len(conn) > 0 {
			var name []byte
			name, conn = nextElement(conn)
			for _, read := range [...]string{r.headerKeyName(), r.tenantHeader, r.authHeader()} {
				if read != "" && len(name) == len(read) && strings.EqualFold(string(name), read) {
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
	if r.tenantAuth || r.jwt {
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
