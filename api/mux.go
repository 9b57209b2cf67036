package api

// The router over routes.go's table: a request's path picks one resource,
// its method one of the resource's operations; the token check asks the
// same table which role that operation needs, so the two cannot disagree
// on what a request is.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/auth"
	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/httpx"
)

// handler answers one operation; p are the path's parameters in the order
// the path names them, as the resource's check left them.
type handler func(ctx *fasthttp.RequestCtx, p []string)

// resource is one path of the API and the operations it answers: a path
// item of api/openapi.json.
type resource struct {
	// path is the document's path. {x} is a parameter of one segment;
	// {x...} takes the rest of the path, slashes included, up to the
	// literal text after it (a KV key may hold a slash: /v1/kv/a/b is key
	// "a/b"). The document names both {x}.
	path string
	// public: served to every caller, token or not (it describes no data).
	public bool
	// check reads and validates the path's parameters (percent-decoding
	// them in p); false means it answered. It runs before the method is
	// looked at, so a bad parameter is 400 whatever the method, unless
	// methodFirst: then a wrong method is 405 whatever the parameters.
	check       func(ctx *fasthttp.RequestCtx, p []string) bool
	methodFirst bool
	// params are the path's parameters in the document: names of its
	// components.parameters.
	params []string
	ops    []op

	pat            []segment
	allow, allowed string // the Allow header and the detail of a 405
}

// op is one operation of a resource: one route.
type op struct {
	method string // GET answers HEAD too (without the body)
	id     string // the document's operationId
	role   auth.Role
	handle handler
	// note says what the method does where it is not plain (a 405's
	// detail: "POST (an increment)").
	note string
	// stores are the store operations the handler proposes, each of whose
	// result codes (command.Op.Codes) it answers (TestEveryCodeAnswered).
	stores []command.Type
	// doc is the operation in api/openapi.json, beyond what the row says.
	doc opDoc
}

// stray answers a path under prefix that no resource takes; rest is the
// path after prefix.
type stray struct {
	prefix string
	answer func(ctx *fasthttp.RequestCtx, rest string)
}

// mux is a table of resources ready to route.
type mux struct {
	exact     map[string]*resource
	templated []*resource // the most literal text first
	strays    []stray
}

// methodOrder is the order methods are named in an Allow header.
var methodOrder = []string{"GET", "HEAD", "PUT", "POST", "PATCH", "DELETE"}

// newMux builds the router over table; a path that does not parse, a
// resource twice, or an operation twice is a bug of the table (panic:
// the package's tests build it).
func newMux(table []resource, strays []stray) *mux {
	m := &mux{exact: map[string]*resource{}, strays: strays}
	for i := range table {
		r := &table[i]
		r.pat = parsePath(r.path)
		var names []string
		for _, o := range r.ops {
			if slices.Contains(names, o.method) || !slices.Contains(methodOrder, o.method) || o.method == "HEAD" {
				panic(fmt.Sprintf("api: %s: method %q twice or not routable", r.path, o.method))
			}
			names = append(names, o.method)
		}
		r.allow, r.allowed = allowOf(r.ops)
		if len(r.pat) == 1 && r.pat[0].name == "" {
			if m.exact[r.path] != nil {
				panic("api: path twice: " + r.path)
			}
			m.exact[r.path] = r
			continue
		}
		m.templated = append(m.templated, r)
	}
	slices.SortStableFunc(m.templated, func(a, b *resource) int { return literalLen(b.pat) - literalLen(a.pat) })
	return m
}

// allowOf is a resource's Allow header, and the detail of its 405 ("use
// GET, HEAD, PUT, POST (an increment) or DELETE").
func allowOf(ops []op) (allow, detail string) {
	var methods, said []string
	for _, m := range methodOrder {
		for _, o := range ops {
			if o.method != m {
				continue
			}
			s := m
			if m == "GET" {
				methods = append(methods, "GET", "HEAD")
				s = "GET, HEAD"
			} else {
				methods = append(methods, m)
			}
			if o.note != "" {
				s += " (" + o.note + ")"
			}
			said = append(said, s)
		}
	}
	detail = "use " + said[len(said)-1]
	if len(said) > 1 {
		detail = "use " + strings.Join(said[:len(said)-1], ", ") + " or " + said[len(said)-1]
	}
	return strings.Join(methods, ", "), detail
}

// resolve finds the resource that takes path, and its parameters as sent.
func (m *mux) resolve(path string) (*resource, []string) {
	if r := m.exact[path]; r != nil {
		return r, nil
	}
	for _, r := range m.templated {
		if p, ok := match(r.pat, path); ok {
			return r, p
		}
	}
	return nil, nil
}

// find is r's operation for method (HEAD: GET's), or nil.
func (r *resource) find(method string) *op {
	if method == "HEAD" {
		method = "GET"
	}
	for i := range r.ops {
		if r.ops[i].method == method {
			return &r.ops[i]
		}
	}
	return nil
}

// role is the least role that may send method to path: the operation's,
// or for a request no operation takes (answered 404 or 405 after the
// token check) the rule the table's roles follow: reads are every role's,
// writes under the application's prefixes an application's, every other
// change an administrator's.
func (m *mux) role(method, path string) auth.Role {
	if r, _ := m.resolve(path); r != nil {
		if o := r.find(method); o != nil {
			return o.role
		}
	}
	switch {
	case method == fasthttp.MethodGet || method == fasthttp.MethodHead:
		return auth.RoleRead
	case strings.HasPrefix(path, "/v1/kv/"), strings.HasPrefix(path, "/v1/once/"), strings.HasPrefix(path, "/v1/locks/"):
		return auth.RoleApp
	}
	return auth.RoleAdmin
}

// public: path is served to every caller.
func (m *mux) public(path string) bool {
	r, _ := m.resolve(path)
	return r != nil && r.public
}

// serve routes one request: 404 for a path no resource takes, the
// resource's check, 405 for a method it does not answer, then the
// operation's handler.
func (m *mux) serve(ctx *fasthttp.RequestCtx, method, path string) {
	r, p := m.resolve(path)
	if r == nil {
		for _, s := range m.strays {
			if rest, ok := strings.CutPrefix(path, s.prefix); ok {
				s.answer(ctx, rest)
				return
			}
		}
		httpx.WriteProblem(ctx, httpx.NotFound, "no such endpoint: "+path)
		return
	}
	if !r.methodFirst && r.check != nil && !r.check(ctx, p) {
		return
	}
	o := r.find(method)
	if o == nil {
		httpx.WriteProblem(ctx, httpx.MethodNotAllowed, r.allowed)
		ctx.Response.Header.Set("Allow", r.allow)
		return
	}
	if r.methodFirst && r.check != nil && !r.check(ctx, p) {
		return
	}
	o.handle(ctx, p)
}
