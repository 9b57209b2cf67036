package gateway

import "bytes"

// How a request target is read. The gateway matches routes on the path as
// it was sent; the upstream, and every hop before it, reads the same bytes
// by its own rules. Where those rules disagree on which route a path names,
// the gateway cannot know which one the upstream serves, so it refuses the
// request (400 ambiguous-path) rather than pass it through unprotected.
// The rules, from the parsers' own documents:
//
//   - WHATWG URL (Node's new URL, browsers, Deno): a target starting "//"
//     (or "/\", "\\": a backslash is a slash in http URLs) is a host
//     followed by a path, so "//x/pay" read against a base is /pay on host
//     x; ASCII tab and newlines are removed anywhere, leading and trailing
//     C0 controls and spaces are stripped; "%2e" is a dot in a dot segment
//     ("/x/%2e%2e/pay" is /pay); nothing else is decoded.
//   - Python's urllib.parse.urlsplit: "//x/pay" is netloc x, path /pay; tab
//     and newlines are removed; frameworks unquote() the path after.
//   - Go's net/url: url.Parse reads "//x/pay" as host x too (the server's
//     ParseRequestURI does not); the path is decoded once; ServeMux
//     cleans it (duplicate slashes, dot segments).
//   - Java servlet containers (Tomcat, Jetty) and Spring: ";params" are
//     stripped from every segment before decoding ("/pay;x=1", "/..;/"),
//     then the path is decoded, "//" merged and dot segments resolved;
//     Spring's suffix patterns (before 5.3) serve /pay.json and /pay. as
//     /pay, as Rails' "(.:format)" serves /pay.json.
//   - nginx: decodes the path, merges slashes (merge_slashes on), resolves
//     dot segments; a proxy_pass with a URI, or any rewrite, hands the
//     decoded path on, so a second parser decodes it again: "%2561" is
//     "%61" to the first hop and "a" to the next, and a decoded "%3F",
//     "%23" or "%20" ends the path where the next hop reads it.
//   - C code (and PHP before 5.3.4) stops at a decoded NUL; Windows file
//     lookups (IIS, static handlers) drop a segment's trailing dots and
//     spaces.
//
// A plain path (plainPath) with no dot in it that a suffix pattern or
// Windows would drop (dotted) reads the same under all of them and is
// matched as it is, without allocating. Any other is read every way above
// (readPath with each readMode of strictReadings and hopReadings; a plain
// but dotted path only with the hop readings: the others leave it as it
// is).

// readMode says how readPath reads a path: which of the rules above apply.
type readMode uint16

const (
	readDecode    readMode = 1 << iota // percent-decode once
	readDecodeAll                      // percent-decode until nothing is left to decode
	readBackslash                      // '\' is '/' (WHATWG in http URLs, and servers that decode it)
	readDropSpace                      // remove tab, CR and LF (WHATWG, urlsplit)
	readCut                            // end the path at '?', '#', NUL, or any other byte up to space
	readAuthority                      // "//host/path" is host, then path (WHATWG, urlsplit, url.Parse)
	readTrimDots                       // drop a segment's trailing dots and spaces (Windows)
	readExtension                      // drop the last segment's ".ext" (Spring suffix patterns, Rails formats)
)

// strictReadings are the readings of a path every hop agrees is a path:
// as sent, less ";" parameters, merged and resolved; and that decoded
// once. A path whose strict readings name different routes (or a route and
// none) is refused.
var strictReadings = [...]readMode{readDecode | readBackslash, 0}

// hopReadings are the readings a chain of hops can give the path: decoded
// until nothing is left (each hop decodes once), with a leading "//" a
// host and trailing dots dropped, then read as a path (a decoded '?' is
// part of it, as Tomcat reads it), by a URL parser (tab and newlines
// dropped) or as a request line (cut at the first '?', '#', space or
// control), each with its extension or without. A path that one of them
// reads as a route other than the one it names as sent is refused.
var hopReadings = func() (modes [8]readMode) {
	base := readDecode | readDecodeAll | readBackslash | readAuthority | readTrimDots
	for i, m := range [...]readMode{0, readDropSpace, readDropSpace | readCut, readCut} {
		modes[2*i], modes[2*i+1] = base|m, base|m|readExtension
	}
	return modes
}()

// hopReadingsFor is the hop readings that can differ for raw: all of
// them when some escape in it decodes to a byte the URL parsers drop or a
// request line ends at (a control, space, '?', '#') or to another escape
// ('%'); else the first two (with its extension and without), since
// dropping and cutting find nothing.
func hopReadingsFor(raw []byte) []readMode {
	for i := 0; i+2 < len(raw); i++ {
		if raw[i] == '%' && isHex(raw[i+1]) && isHex(raw[i+2]) {
			if c := unhex(raw[i+1])<<4 | unhex(raw[i+2]); c <= ' ' || c == '?' || c == '#' || c == '%' {
				return hopReadings[:]
			}
		}
	}
	return hopReadings[:2]
}

// maxDecodes bounds how often a hop reading decodes: no chain of servers
// decodes a path that often, and a path that still changes after so many
// passes is refused rather than read at a cost that grows with its depth.
const maxDecodes = 8

// plainPath reports whether p reads the same to every parser above but
// for its dots (see dotted): absolute, with no percent-encoding, ';'
// parameters, backslashes, duplicate slashes or dot segments.
func plainPath(p []byte) bool {
	if len(p) == 0 || p[0] != '/' {
		return false
	}
	for i, c := range p {
		switch c {
		case '%', ';', '\\':
			return false
		case '/':
			if seg := p[i+1:]; len(seg) > 0 && (seg[0] == '/' || dotSegment(seg)) {
				return false
			}
		}
	}
	return true
}

// dotSegment reports whether the segment that starts rest is "." or "..".
func dotSegment(rest []byte) bool {
	if i := bytes.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	return string(rest) == "." || string(rest) == ".."
}

// dotted reports whether a plain path has a segment that ends in a dot
// (Windows drops it) or a dot in its last segment (an extension a suffix
// pattern strips): then only the hop readings can read it otherwise.
func dotted(p []byte) bool {
	if len(p) > 1 && p[len(p)-1] == '/' { // the segment before a trailing slash counts as the last
		p = p[:len(p)-1]
	}
	last := 0 // where the last segment starts
	for i, c := range p {
		if c == '/' {
			if i > 0 && p[i-1] == '.' {
				return true
			}
			last = i + 1
		}
	}
	return bytes.IndexByte(p[last:], '.') > 0 || len(p) > 0 && p[len(p)-1] == '.'
}

// readPath reads a path that is not plain as mode says: decoded or not,
// then with ';' parameters stripped from every segment (Tomcat, Spring),
// empty segments merged and dot segments resolved (RFC 3986 5.2.4). A
// path that ended in a slash, or in a segment that reads as none, keeps
// its trailing slash. false: the path is encoded deeper than maxDecodes.
func readPath(raw []byte, mode readMode) ([]byte, bool) {
	return readPathInto(nil, raw, mode)
}

// readPathInto is readPath writing the reading into out's memory when it
// fits (a reading is at most one byte longer than the path it reads).
func readPathInto(out, raw []byte, mode readMode) ([]byte, bool) {
	p := raw
	switch {
	case mode&readDecodeAll != 0:
		var ok bool
		if p, ok = decodeAll(raw); !ok {
			return nil, false
		}
	case mode&readDecode != 0:
		p = percentDecode(raw)
	}
	if mode&readDropSpace != 0 && bytes.ContainsAny(p, "\t\r\n") {
		kept := make([]byte, 0, len(p))
		for _, c := range p {
			if c != '\t' && c != '\r' && c != '\n' {
				kept = append(kept, c)
			}
		}
		p = kept
	}
	if mode&readCut != 0 {
		for i, c := range p {
			if c <= ' ' || c == '?' || c == '#' {
				p = p[:i]
				break
			}
		}
	}
	if mode&readAuthority != 0 {
		p = afterAuthority(p)
	}
	if cap(out) < len(p)+1 {
		out = make([]byte, 0, len(p)+1)
	}
	out = out[:0]
	trailing := false
	for last := false; !last; {
		seg := p
		i := bytes.IndexByte(p, '/')
		if mode&readBackslash != 0 {
			i = bytes.IndexAny(p, "/\\")
		}
		if i >= 0 {
			seg, p = p[:i], p[i+1:]
		} else {
			last = true
		}
		if j := bytes.IndexByte(seg, ';'); j >= 0 {
			seg = seg[:j]
		}
		if mode&readTrimDots != 0 && string(seg) != "." && string(seg) != ".." {
			seg = bytes.TrimRight(seg, ". ")
		}
		trailing = true
		switch string(seg) {
		case "", ".":
		case "..":
			out = out[:max(bytes.LastIndexByte(out, '/'), 0)]
		default:
			out = append(append(out, '/'), seg...)
			trailing = false
		}
	}
	if mode&readExtension != 0 {
		seg := bytes.LastIndexByte(out, '/') + 1
		if dot := bytes.IndexByte(out[seg:], '.'); dot > 0 {
			out = out[:seg+dot]
		}
	}
	if trailing || len(out) == 0 {
		out = append(out, '/')
	}
	return out, true
}

// readHops appends to readings raw's hop readings that can differ
// (hopReadingsFor), decoding raw once for all of them; false: raw is
// encoded deeper than maxDecodes.
func readHops(readings [][]byte, raw []byte) ([][]byte, bool) {
	decoded, ok := decodeAll(raw)
	if !ok {
		return readings, false
	}
	modes := hopReadingsFor(raw)
	n := len(decoded) + 1 // the most a reading needs
	arena := make([]byte, len(modes)*n)
	for i, m := range modes {
		p, _ := readPathInto(arena[i*n:i*n:(i+1)*n], decoded, m&^(readDecode|readDecodeAll))
		readings = append(readings, p)
	}
	return readings, true
}

// decodeAll percent-decodes p until nothing is left to decode, at most
// maxDecodes times; false: it was still changing.
func decodeAll(p []byte) ([]byte, bool) {
	for n := 0; ; n++ {
		q := percentDecode(p)
		if len(q) == len(p) { // a pass that decodes anything shortens the path
			return p, true
		}
		if n == maxDecodes {
			return nil, false
		}
		p = q
	}
}

// afterAuthority is what a URL parser takes for the path of p: p itself,
// unless p starts with two slashes (either way round): then what follows
// them is a host, and the path starts after it (WHATWG skips any further
// slashes first, as it does for http URLs).
func afterAuthority(p []byte) []byte {
	slash := func(c byte) bool { return c == '/' || c == '\\' }
	if len(p) < 2 || !slash(p[0]) || !slash(p[1]) {
		return p
	}
	i := 2
	for i < len(p) && slash(p[i]) {
		i++
	}
	for i < len(p) && !slash(p[i]) {
		i++
	}
	if i == len(p) {
		return []byte("/")
	}
	return p[i:]
}

// percentDecode decodes every %XX of p; a '%' not followed by two hex
// digits stays as it is. Without a '%' it is p itself.
func percentDecode(p []byte) []byte {
	if bytes.IndexByte(p, '%') < 0 {
		return p
	}
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]) {
			out = append(out, unhex(p[i+1])<<4|unhex(p[i+2]))
			i += 2
			continue
		}
		out = append(out, p[i])
	}
	return out
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
