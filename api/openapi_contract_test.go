package api

// The OpenAPI document held against the API: every API listener the
// package's tests start is wrapped (wrapHandler) in a check of each request
// and its answer against api/openapi.json, with kin-openapi's validator
// (OpenAPI 3.1, JSON Schema 2020-12). An answer the document does not
// describe (a status, a header, a body, each line of an NDJSON body, a
// problem type it does not list for that operation, or any answer on a
// path it does not list) fails the package's run, with every such pair
// named; so does a request the document refuses that the API answered 2xx,
// or one with a query parameter the operation does not name.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/valyala/fasthttp"
)

// contract is the loaded document and what the checks saw.
type contract struct {
	doc    *openapi3.T
	router routers.Router

	// paused: a measurement runs (pause), which the check's own cost
	// would be part of.
	paused atomic.Bool

	mu       sync.Mutex
	pairs    int
	seen     map[string]map[int]int // operation id (or "no route", "method not allowed") -> status -> count
	offences []string
}

// loadContract loads and validates api/openapi.json (the embedded bytes
// the API serves).
func loadContract() (*contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openAPIDocument)
	if err != nil {
		return nil, fmt.Errorf("api/openapi.json: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("api/openapi.json is no valid OpenAPI document: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("api/openapi.json: openapi %q, want 3.1", doc.OpenAPI)
	}
	// The servers entry is an example address; the tests' listeners are on
	// other ports, and every path is matched wherever it is served.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &contract{doc: doc, router: router, seen: map[string]map[int]int{}}, nil
}

// wrap is wrapHandler: h answers, then the pair is checked. The check reads
// nothing h did not read: a body h left unread (a refused caller's) stays
// unread, and only the request's line and headers are checked.
func (c *contract) wrap(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		h(ctx)
		if !c.paused.Load() {
			c.check(ctx)
		}
	}
}

// pause turns the check off until t ends, for a test that measures how the
// listeners answer under load (it must not run in parallel with others).
func (c *contract) pause(t *testing.T) {
	c.paused.Store(true)
	t.Cleanup(func() { c.paused.Store(false) })
}

// Statuses an answer can have before the request reached a route: what
// fasthttp refuses, the browser checks, the token check, the body read.
var beforeRoute = []int{400, 401, 403, 408, 413, 415, 421, 431, 503}

func (c *contract) check(ctx *fasthttp.RequestCtx) {
	if ctx.Response.IsBodyStream() {
		body, _ := io.ReadAll(ctx.Response.BodyStream())
		ctx.Response.SetBody(body) // closes the stream (a spooled backup)
	}
	status := ctx.Response.StatusCode()
	what := fmt.Sprintf("%s %s -> %d", ctx.Method(), ctx.RequestURI(), status)
	op, err := c.checkPair(ctx, status)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pairs++
	if c.seen[op] == nil {
		c.seen[op] = map[int]int{}
	}
	c.seen[op][status]++
	if err != nil {
		c.offences = append(c.offences, fmt.Sprintf("%s: %v\n\tbody: %.300s", what, err, ctx.Response.Body()))
	}
}

// checkPair checks one request and answer; op is the operation the
// document has for it.
func (c *contract) checkPair(ctx *fasthttp.RequestCtx, status int) (op string, _ error) {
	method := string(ctx.Method())
	head := method == fasthttp.MethodHead
	if head {
		method = fasthttp.MethodGet // HEAD is GET without the body (the document's description)
	}
	var body io.Reader = http.NoBody
	bodyRead := !ctx.Request.IsBodyStream()
	if bodyRead {
		body = bytes.NewReader(ctx.Request.Body())
	}
	u, err := url.ParseRequestURI(string(ctx.RequestURI()))
	if err != nil || !strings.HasPrefix(u.Path, "/") {
		return "no route", c.refusal(ctx, status, beforeRoute, "the request target %q is no path", ctx.RequestURI())
	}
	u.Scheme, u.Host = "http", string(ctx.Host())
	req, err := http.NewRequest(method, u.String(), body)
	if err != nil {
		return "no route", c.refusal(ctx, status, beforeRoute, "%v", err)
	}
	for k, v := range ctx.Request.Header.All() {
		req.Header.Add(string(k), string(v))
	}
	route, params, err := c.router.FindRoute(req)
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		return "no route", c.refusal(ctx, status, append(beforeRoute, 404), "a path the document does not list")
	case errors.Is(err, routers.ErrMethodNotAllowed):
		if allow, want := string(ctx.Response.Header.Peek("Allow")), c.allowed(req); status == 405 && allow != want {
			return "method not allowed", fmt.Errorf("405 with Allow %q; the document lists %q", allow, want)
		}
		return "method not allowed", c.refusal(ctx, status, append(beforeRoute, 405), "a method the document does not list")
	case err != nil:
		return "no route", err
	}
	op = route.Operation.OperationID
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
		ExcludeRequestBody: !bodyRead, IncludeResponseStatus: true, MultiError: true}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	if reqErr != nil && (status < 400 || (status >= 500 && status != 503)) {
		return op, fmt.Errorf("the document refuses the request (%v), yet the API answered %d", reqErr, status)
	}
	if name := undocumentedQuery(route, u.Query()); name != "" && status < 300 {
		// kin-openapi lets a query parameter the operation does not
		// name pass: one the code reads and the document lacks would.
		return op, fmt.Errorf("query parameter %q is none of the operation's, yet the API answered %d", name, status)
	}
	if head {
		if route.Operation.Responses.Status(status) == nil {
			return op, fmt.Errorf("HEAD: status %d is not documented for GET", status)
		}
		return op, nil
	}
	hdr := http.Header{}
	for k, v := range ctx.Response.Header.All() {
		hdr.Add(string(k), string(v))
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: hdr, Options: opts}
	out.SetBodyBytes(ctx.Response.Body())
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return op, err
	}
	return op, c.checkItems(route.Operation, status, string(ctx.Response.Header.ContentType()), ctx.Response.Body())
}

// itemSchema is the extension by which a media type of a sequence of JSON
// values (NDJSON) names the schema of each: OpenAPI 3.2's itemSchema, for
// which 3.1 has no field. kin-openapi checks such a body against nothing.
const itemSchema = "x-idemgate-item-schema"

// checkItems checks every line of an NDJSON answer against the schema its
// media type names in itemSchema; an NDJSON answer whose media type names
// none is off the document too.
func (c *contract) checkItems(op *openapi3.Operation, status int, ctype string, body []byte) error {
	mt, _, _ := strings.Cut(ctype, ";")
	mt = strings.TrimSpace(mt)
	if !strings.HasSuffix(mt, "ndjson") {
		return nil
	}
	var media *openapi3.MediaType
	if r := op.Responses.Status(status); r != nil && r.Value != nil {
		media = r.Value.Content.Get(mt)
	}
	var ref string
	if media != nil {
		ext, _ := media.Extensions[itemSchema].(map[string]any)
		ref, _ = ext["$ref"].(string)
	}
	name, ok := strings.CutPrefix(ref, "#/components/schemas/")
	schema := c.doc.Components.Schemas[name]
	if !ok || schema == nil || schema.Value == nil {
		return fmt.Errorf("%d %s: the document names no schema for its lines (%s: {\"$ref\": \"#/components/schemas/…\"})", status, mt, itemSchema)
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n")) {
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return fmt.Errorf("line %d: not JSON: %v", i+1, err)
		}
		if err := schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			return fmt.Errorf("line %d doesn't match schema %s: %v", i+1, ref, err)
		}
	}
	return nil
}

// undocumentedQuery is the first query parameter of q that neither the
// operation nor its path names, or "".
func undocumentedQuery(route *routers.Route, q url.Values) string {
	var names []string
	for _, params := range []openapi3.Parameters{route.PathItem.Parameters, route.Operation.Parameters} {
		for _, p := range params {
			if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
				names = append(names, p.Value.Name)
			}
		}
	}
	var out []string
	for name := range q {
		if !slices.Contains(names, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return ""
	}
	return out[0]
}

// allowed is what Allow must say for req's path: the methods the document
// lists for it, HEAD beside GET, in the router's order (methodOrder).
func (c *contract) allowed(req *http.Request) string {
	var out []string
	for _, m := range methodOrder {
		probe := req.Clone(context.Background())
		probe.Method = m
		if m == "HEAD" {
			probe.Method = "GET"
		}
		if _, _, err := c.router.FindRoute(probe); err == nil {
			out = append(out, m)
		}
	}
	return strings.Join(out, ", ")
}

// refusal checks an answer to a request the document has no operation
// for: a problem document with one of the statuses allowed.
func (c *contract) refusal(ctx *fasthttp.RequestCtx, status int, allowed []int, why string, args ...any) error {
	what := fmt.Sprintf(why, args...)
	if !slices.Contains(allowed, status) {
		return fmt.Errorf("%s, answered %d (want a problem with one of %v)", what, status, allowed)
	}
	if ct := string(ctx.Response.Header.ContentType()); ct != "application/problem+json" {
		return fmt.Errorf("%s, answered %d as %q (want application/problem+json)", what, status, ct)
	}
	var p map[string]any
	if err := json.Unmarshal(ctx.Response.Body(), &p); err != nil {
		return fmt.Errorf("%s: problem document: %v", what, err)
	}
	schema := c.doc.Components.Schemas["Problem"].Value
	if err := schema.VisitJSON(p, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("%s: not a Problem: %v", what, err)
	}
	return nil
}

// report prints what was checked and every answer off the document; 1
// when there was one (or, after the whole suite, an operation it never
// answered 2xx).
func (c *contract) report(w io.Writer) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := make([]string, 0, len(c.seen))
	for op := range c.seen {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	fmt.Fprintf(w, "openapi: %d request/answer pairs checked against api/openapi.json, %d off it\n", c.pairs, len(c.offences))
	for _, op := range ops {
		var st []string
		for s, n := range c.seen[op] {
			st = append(st, fmt.Sprintf("%d×%d", s, n))
		}
		sort.Strings(st)
		fmt.Fprintf(w, "  %-20s %s\n", op, strings.Join(st, " "))
	}
	code := 0
	if len(c.offences) > 0 {
		fmt.Fprintf(w, "FAIL: answers api/openapi.json does not describe:\n%s\n", strings.Join(c.offences, "\n"))
		code = 1
	}
	// The whole suite (no -run, not -short) answers every operation 2xx
	// at least once: the document is checked on success too.
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "" && !testing.Short() {
		for _, op := range c.operations() {
			ok := false
			for s := range c.seen[op] {
				ok = ok || (s >= 200 && s < 300)
			}
			if !ok {
				fmt.Fprintf(w, "FAIL: the API's tests never answered %s with 2xx\n", op)
				code = 1
			}
		}
	}
	return code
}

// operations are the document's operation ids.
func (c *contract) operations() []string {
	var out []string
	for _, item := range c.doc.Paths.Map() {
		for _, op := range item.Operations() {
			out = append(out, op.OperationID)
		}
	}
	sort.Strings(out)
	return out
}

// theContract is the check TestMain installed.
var theContract *contract

func TestMain(m *testing.M) {
	flag.Parse()
	c, err := loadContract()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	theContract = c
	wrapHandler = c.wrap
	code := m.Run()
	if r := c.report(os.Stdout); code == 0 {
		code = r
	}
	os.Exit(code)
}
