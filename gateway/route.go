package gateway

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/config"
)

// tokenMode says whether a route consumes a Form-Token.
type tokenMode int

const (
	tokenOff tokenMode = iota
	tokenOptional
	tokenRequired
)

// route is a compiled config.Route.
type route struct {
	name, scope       string
	methods           [][]byte // upper case, as validated
	path              []byte
	prefix            bool // path ends in "*": match the prefix before it
	foldCase          bool // match: case-insensitive
	ignoreSlash       bool // trailing_slash: ignore
	keyQuery          bool // key from the query string, else from a header
	keyName           string
	requireKey        bool
	tenantHeader      string // "" and !tenantAuth: no tenant
	tenantAuth        bool   // tenant = digest of Authorization
	tenantClaim       string // tenant = this claim of the bearer JWT
	jwt               bool   // a valid bearer JWT is required
	ttl               time.Duration
	processingTimeout time.Duration
	waitTimeout       time.Duration
	wait              bool // on_in_flight: wait
	releaseUnknown    bool // on_unknown: release
	rejectSuspect     bool // on_suspect: reject
	token             tokenMode
	maxStoredBody     int
	releaseStatus     map[int]bool
	replayAllow       map[string]bool // lowercased header names allowed despite the default filter
	keyJSON           []string        // key: json:/pointer, split; nil otherwise
	fpJSON            bool            // fingerprint: json
	fpIgnore          [][]string      // fingerprint_ignore, split
	keyFormat         *regexp.Regexp  // key_format; nil: any key
	keyFormatText     string
	keyMinLen         int
	drop              map[string]bool // drop_headers, lowercased
	metrics           *routeMetrics
}

// compileRoutes turns validated config routes into matchers.
func compileRoutes(rs []config.Route) ([]*route, error) {
	out := make([]*route, 0, len(rs))
	for i, c := range rs {
		r := &route{
			name: c.Name, scope: c.Scope, path: []byte(strings.TrimSuffix(c.Path, "*")), prefix: strings.HasSuffix(c.Path, "*"),
			foldCase: c.Match == "case-insensitive", ignoreSlash: c.TrailingSlash == "ignore",
			requireKey: c.RequireKey == nil || *c.RequireKey,
			ttl:        c.TTL.D(), processingTimeout: c.ProcessingTimeout.D(), waitTimeout: c.WaitTimeout.D(),
			wait: c.OnInFlight == "wait", releaseUnknown: c.OnUnknown == "release", rejectSuspect: c.OnSuspect == "reject",
			releaseStatus: map[int]bool{429: true, 503: true}, replayAllow: map[string]bool{},
		}
		if r.scope == "" || r.ttl <= 0 {
			return nil, fmt.Errorf("gateway: route %d (%s) is not validated", i, c.Name)
		}
		for _, m := range c.Methods {
			r.methods = append(r.methods, []byte(m))
		}
		kind, name, _ := strings.Cut(c.Key, ":")
		r.keyQuery, r.keyName = kind == "query", name
		if err := r.compileOptions(c, kind); err != nil {
			return nil, fmt.Errorf("gateway: route %d (%s): %w", i, c.Name, err)
		}
		switch {
		case c.Tenant == "authorization":
			r.tenantAuth = true
		case strings.HasPrefix(c.Tenant, "jwt:"):
			r.tenantClaim = strings.TrimPrefix(c.Tenant, "jwt:")
		case c.Tenant != "":
			_, r.tenantHeader, _ = strings.Cut(c.Tenant, ":")
		}
		switch c.Token {
		case "optional":
			r.token = tokenOptional
		case "required":
			r.token = tokenRequired
		}
		r.jwt = c.Auth == "jwt" || r.tenantClaim != ""
		if c.MaxStoredBody != nil {
			r.maxStoredBody = int(*c.MaxStoredBody)
		}
		for _, s := range c.ReleaseStatuses {
			r.releaseStatus[s] = true
		}
		for _, h := range c.ReplayHeaders {
			r.replayAllow[strings.ToLower(h)] = true
		}
		out = append(out, r)
	}
	return out, nil
}

// compileOptions compiles the options peer gateways have: the key from a
// JSON body, its format, the JSON fingerprint, dropped headers.
func (r *route) compileOptions(c config.Route, keyKind string) error {
	var err error
	if keyKind == "json" {
		if r.keyJSON, err = config.ParsePointer(r.keyName); err != nil {
			return err
		}
		r.keyName = ""
	}
	r.fpJSON = c.Fingerprint == "json"
	for _, p := range c.FingerprintIgnore {
		ptr, err := config.ParsePointer(p)
		if err != nil {
			return err
		}
		r.fpIgnore = append(r.fpIgnore, ptr)
	}
	if r.keyFormat, err = config.CompileKeyFormat(c.KeyFormat); err != nil {
		return err
	}
	r.keyFormatText, r.keyMinLen = c.KeyFormat, c.KeyMinLength
	r.drop = map[string]bool{}
	for _, h := range c.DropHeaders {
		r.drop[strings.ToLower(h)] = true
	}
	return nil
}

// readsJSON reports whether the route reads the body as JSON.
func (r *route) readsJSON() bool { return r.keyJSON != nil || r.fpJSON }

// Routes and their aliases. An upstream does not read a path only as it is
// spelled: Spring and Express match letter case loosely by default, most
// frameworks take /pay/ for /pay, Tomcat strips ";x=1" from a segment,
// every server decodes %61 and resolves /x/../pay, a URL parser reads
// "//x/pay" as host x's /pay, and many take the method from
// X-HTTP-Method-Override. A request that names a route only by such an
// alias would pass through with no key and no token, and be served as the
// route. So the gateway takes only an origin-form target starting with one
// '/' (else 400, whatever it names), and reads its path as it was sent: a
// plain path (pathread.go) is matched as it is, and an alias of a route
// (letter case, a trailing slash) is taken as the route where its options
// say the upstream serves it so (match, trailing_slash), and refused with
// 400 otherwise. A path that is not plain is read every way a server, or a
// chain of them, might read it (pathread.go); if any reading names a
// route, the request is refused, unless every reading names the same
// prefix route and the request spells that prefix plainly: then only what
// follows the prefix (an id with %20 in it, say) needs reading, and it
// cannot leave the route.

// alias says how a request differs from the route it names: 0 is the
// route's own spelling.
type alias uint8

const (
	aliasCase  alias = 1 << iota // letter case, of the path or the method
	aliasSlash                   // a trailing slash more or fewer
)

// relMethod reports whether m names one of the route's methods, with the
// route's spelling of it.
func (r *route) relMethod(m []byte) (canon []byte, a alias, ok bool) {
	for _, rm := range r.methods {
		if bytes.Equal(m, rm) {
			return rm, 0, true
		}
	}
	for _, rm := range r.methods {
		if bytes.EqualFold(m, rm) {
			return rm, aliasCase, true
		}
	}
	return nil, 0, false
}

// relPath reports whether p names the route's path, as it is or by an
// alias.
func (r *route) relPath(p []byte) (a alias, ok bool) {
	rp := r.path
	if r.prefix {
		if len(p) >= len(rp) {
			switch {
			case bytes.Equal(p[:len(rp)], rp):
				return 0, true
			case bytes.EqualFold(p[:len(rp)], rp):
				return aliasCase, true
			}
		}
		// "/orders" for "/orders/*": the prefix but for its slash.
		if len(rp) > 1 && rp[len(rp)-1] == '/' && len(p) == len(rp)-1 {
			return foldRel(p, rp[:len(rp)-1], aliasSlash)
		}
		return 0, false
	}
	if a, ok := foldRel(p, rp, 0); ok {
		return a, true
	}
	tp, trp := trimSlash(p), trimSlash(rp)
	if len(tp) == len(p) && len(trp) == len(rp) {
		return 0, false // neither ends in a slash
	}
	return foldRel(tp, trp, aliasSlash)
}

// foldRel compares p with the route's spelling rp: equal, equal but for
// letter case, or not at all; a is the alias the comparison stands for.
func foldRel(p, rp []byte, a alias) (alias, bool) {
	switch {
	case bytes.Equal(p, rp):
		return a, true
	case bytes.EqualFold(p, rp):
		return a | aliasCase, true
	}
	return 0, false
}

func trimSlash(p []byte) []byte {
	if len(p) > 1 && p[len(p)-1] == '/' {
		return p[:len(p)-1]
	}
	return p
}

// routed is a request a route takes, with the method and path its
// fingerprint is made of: the route's own spelling of them, so that every
// alias the route accepts shares its records (what follows a prefix is
// the request's own, less a trailing slash with trailing_slash: ignore).
// For a request spelled as the route these are the bytes it was sent with.
type routed struct {
	r                  *route
	method             []byte
	pathHead, pathTail []byte
}

func (r *route) take(method, path []byte) routed {
	t := routed{r: r, method: method, pathHead: r.path}
	if r.prefix && len(path) > len(r.path) {
		t.pathTail = path[len(r.path):]
		if r.ignoreSlash {
			t.pathTail = bytes.TrimSuffix(t.pathTail, []byte("/"))
		}
	}
	return t
}

// firstLoose returns the first route that method and path name, as they
// are or by an alias.
func firstLoose(routes []*route, method, path []byte) *route {
	for _, r := range routes {
		if _, _, ok := r.relMethod(method); ok {
			if _, ok := r.relPath(path); ok {
				return r
			}
		}
	}
	return nil
}

// methodOverrides are the headers frameworks take the method from
// (Express's method-override, Spring's HiddenHttpMethodFilter kin, Rails,
// Google's APIs).
var methodOverrides = [...]string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"}

// originForm reports whether target, the request target as sent, is an
// absolute path starting with exactly one '/', with an optional query
// (RFC 9112 section 3.2.1): not "//host/path" or "/\host/path", which URL
// parsers read as a host and a path; not an absolute URL ("http://x/pay",
// whose host a proxy would take in place of Host); no fragment, which no
// client sends.
func originForm(target []byte) bool {
	if len(target) == 0 || target[0] != '/' {
		return false
	}
	if len(target) > 1 && (target[1] == '/' || target[1] == '\\') {
		return false
	}
	return bytes.IndexByte(target, '#') < 0
}

// matchRoute finds the route a request names. It returns the zero routed
// for a request no route protects (it passes through), and a reason when
// the request is refused (400 ambiguous-path), with the route it aliases
// when there is one. A plain path costs a scan of it and of the routes, and
// allocates nothing; any other is read every way pathread.go lists.
func matchRoute(routes []*route, ctx *fasthttp.RequestCtx) (t routed, refused string) {
	if !originForm(ctx.Request.Header.RequestURI()) {
		return routed{}, "the request target must be a path that starts with exactly one '/' (RFC 9112 origin-form): URL parsers read \"//host/path\" (or \"/\\host\") as another host's path, and an absolute URL or a fragment is read otherwise by every hop"
	}
	method, raw := ctx.Method(), ctx.URI().PathOriginal()
	// readings[:nStrict] must name one route; the rest may name no other.
	var buf [len(strictReadings) + 1 + len(hopReadings)][]byte
	readings, nStrict := buf[:1], 1
	readings[0] = raw
	plain := plainPath(raw)
	if !plain { // the first reading, decoded, picks the route the others must name
		readings = buf[:0]
		for _, m := range strictReadings {
			p, _ := readPath(raw, m)
			readings = append(readings, p)
		}
		readings = append(readings, ctx.Path())
		nStrict = len(readings)
	}
	if !plain || dotted(raw) {
		var ok bool
		if readings, ok = readHops(readings, raw); !ok {
			return routed{r: firstLoose(routes, method, raw)}, "the path is percent-encoded deeper than any server decodes it; send it as the route spells it"
		}
	}
	if r, name := overridden(routes, &ctx.Request.Header, method, readings); r != nil {
		return routed{r: r}, name + " names a method of route " + r.name + " on its path: the upstream may serve it as the route"
	}
	// The first route the request names, in any spelling, decides: a later
	// route it names exactly (a catch-all) must not take an alias of an
	// earlier one, which the upstream may serve as that one.
	r := firstLoose(routes, method, readings[0])
	for i, p := range readings[1:] {
		if slices.ContainsFunc(readings[:i+1], func(q []byte) bool { return bytes.Equal(p, q) }) {
			continue // read so already, by as strict a rule
		}
		other := firstLoose(routes, method, p)
		if other == r || i+1 >= nStrict && other == nil {
			continue
		}
		if r == nil {
			r = other
		}
		return routed{r: r}, "the path reads as another route once decoded, stripped of ';' parameters, cut at a decoded '?', '#', space or NUL, or resolved (" + r.name + "); send it as the route spells it"
	}
	if r == nil {
		return routed{}, ""
	}
	m, a, _ := r.relMethod(method)
	for _, p := range readings[:nStrict] {
		pa, _ := r.relPath(p)
		a |= pa
	}
	path := raw
	if !plain {
		if !r.prefix || !literalPrefix(raw, r) {
			return routed{r: r}, "the path names route " + r.name + " only once decoded, stripped of ';' parameters or of an extension, or resolved (dot segments, duplicate slashes, trailing dots); send it as the route spells it"
		}
		path = ctx.Path()
	}
	switch {
	case a&aliasCase != 0 && !r.foldCase:
		return routed{r: r}, "the method or path differs from route " + r.name + "'s only by letter case (the route has match: exact)"
	case a&aliasSlash != 0 && !r.ignoreSlash:
		return routed{r: r}, "the path differs from route " + r.name + "'s only by a trailing slash (the route has trailing_slash: strict)"
	}
	return r.take(m, path), ""
}

// literalPrefix reports whether raw starts with the prefix route's path
// spelled plainly (in any case with match: case-insensitive).
func literalPrefix(raw []byte, r *route) bool {
	if len(raw) < len(r.path) {
		return false
	}
	head := raw[:len(r.path)]
	return bytes.Equal(head, r.path) || r.foldCase && bytes.EqualFold(head, r.path)
}

// overridden returns the first route whose method a method-override header
// names, other than the request's own, on a path one of the readings
// names, with the header's name.
func overridden(routes []*route, h *fasthttp.RequestHeader, method []byte, readings [][]byte) (*route, string) {
	for _, name := range methodOverrides {
		for _, v := range h.PeekAll(name) {
			for len(v) > 0 {
				var tok []byte
				tok, v = nextElement(v)
				if len(tok) == 0 || bytes.EqualFold(tok, method) {
					continue
				}
				for _, r := range routes {
					if _, _, ok := r.relMethod(tok); !ok {
						continue
					}
					for _, p := range readings {
						if _, ok := r.relPath(p); ok {
							return r, name
						}
					}
				}
			}
		}
	}
	return nil, ""
}
