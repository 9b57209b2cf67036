package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/auth"
	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/internal/memstore"
)

// TestOpenAPIServed: GET /v1/openapi.json answers the document in the
// repository, to a caller without a token on an API that wants one, and
// with a token of any role; what a web page sends is still refused, and
// only GET and HEAD are served.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	ac := startAPIs(t, 1, testAccess(t, []string{})) // nothing else open
	u := ac.urls[0] + "/v1/openapi.json"
	for _, tc := range []struct {
		name, method string
		hdr          []string
		status       int
		problem      string
	}{
		{"no token", "GET", nil, 200, ""},
		{"read token", "GET", bearer(readSecret), 200, ""},
		{"a wrong token", "GET", bearer("nope"), 200, ""},
		{"HEAD", "HEAD", nil, 200, ""},
		{"POST", "POST", nil, 405, "method-not-allowed"},
		{"DELETE with a token", "DELETE", bearer(adminSecret), 405, "method-not-allowed"},
		{"a page of another site", "GET", []string{"Sec-Fetch-Site", "cross-site"}, 403, "cross-origin"},
		{"a rebound name", "GET", []string{"Host", "evil.example:9001"}, 421, "misdirected-request"},
	} {
		r := do(t, tc.method, u, "", tc.hdr...)
		switch {
		case r.Status != tc.status:
			t.Errorf("%s: %s = %d %.200s, want %d", tc.name, tc.method, r.Status, r.Body, tc.status)
		case tc.problem != "":
			if got := r.ProblemType(t); got != tc.problem {
				t.Errorf("%s: problem %s, want %s", tc.name, got, tc.problem)
			}
		case tc.method == "GET" && (r.Body != string(want) || r.Header.Get("Content-Type") != "application/json"):
			t.Errorf("%s: %s answered %q, %d bytes; want api/openapi.json as application/json", tc.name, u, r.Header.Get("Content-Type"), len(r.Body))
		}
	}
	// The token check still holds everywhere else.
	if r := do(t, "GET", ac.urls[0]+"/v1/status", ""); r.Status != 401 {
		t.Errorf("GET /v1/status without a token = %d, want 401", r.Status)
	}
}

// TestOpenAPIContractBites: the check every API test's requests go
// through refuses what the document does not describe; a test of it that
// always passed would prove nothing.
func TestOpenAPIContractBites(t *testing.T) {
	c := theContract
	type answer struct {
		status int
		ctype  string
		body   string
		hdr    []string
	}
	problem := func(status int, slug string) answer {
		return answer{status, "application/problem+json",
			`{"type":"https://idemgate.dev/problems/` + slug + `","title":"t","status":` + strconv.Itoa(status) + `}`, nil}
	}
	for _, tc := range []struct {
		name, method, uri, body string
		reqHdr                  []string
		answer                  answer
		ok                      bool
	}{
		{"a documented value", "GET", "/v1/kv/k", "", nil, answer{200, "application/octet-stream", "v", []string{"ETag", `"3"`}}, true},
		{"a documented problem", "GET", "/v1/kv/k", "", nil, problem(404, "not-found"), true},
		{"a status not documented", "GET", "/v1/kv/k", "", nil, problem(418, "not-found"), false},
		{"a problem type not listed for the status", "GET", "/v1/kv/k", "", nil, problem(404, "unknown-node"), false},
		{"a 200 to a query parameter the document does not name", "GET", "/v1/kv/k?verbose=1", "", nil, answer{200, "application/octet-stream", "v", []string{"ETag", `"3"`}}, false},
		{"a 400 to a query parameter the document does not name", "GET", "/v1/kv/k?verbose=1", "", nil, problem(400, "bad-request"), true},
		{"a value without its ETag", "GET", "/v1/kv/k", "", nil, answer{200, "application/octet-stream", "v", nil}, false},
		{"a problem as JSON", "GET", "/v1/kv/k", "", nil, answer{404, "application/json", `{"type":"x"}`, nil}, false},
		{"a field the document does not name", "GET", "/v1/status", "", nil, answer{200, "application/json",
			`{"node":"n1","version":"v","role":"leader","term":1,"leader":"n1","cluster_id":"c","last_index":1,` +
				`"commit_index":1,"applied_index":1,"ready":true,"extra":1}`, nil}, false},
		{"a role not documented", "GET", "/v1/status", "", nil, answer{200, "application/json",
			`{"node":"n1","version":"v","role":"boss","term":1,"leader":"n1","cluster_id":"c","last_index":1,` +
				`"commit_index":1,"applied_index":1,"ready":true}`, nil}, false},
		{"a 200 on a path not documented", "GET", "/v1/nothing", "", nil, answer{200, "text/plain", "ok", nil}, false},
		{"a 404 on a path not documented", "GET", "/v1/nothing", "", nil, problem(404, "not-found"), true},
		{"a 405 without Allow", "PATCH", "/v1/kv/k", "", nil, problem(405, "method-not-allowed"), false},
		{"a 405 with the wrong Allow", "PATCH", "/v1/kv/k", "", nil, answer{405, "application/problem+json",
			`{"type":"https://idemgate.dev/problems/method-not-allowed","title":"t","status":405}`, []string{"Allow", "GET, PUT"}}, false},
		{"a 405 with the documented Allow", "PATCH", "/v1/kv/k", "", nil, answer{405, "application/problem+json",
			`{"type":"https://idemgate.dev/problems/method-not-allowed","title":"t","status":405}`, []string{"Allow", "GET, HEAD, PUT, POST, DELETE"}}, true},
		{"a 200 to a request the document refuses", "PUT", "/v1/kv/k?nx=maybe", "v", nil,
			answer{200, "application/octet-stream", "", []string{"ETag", `"3"`}}, false},
		{"a 400 to a request the document refuses", "PUT", "/v1/kv/k?nx=maybe", "v", nil, problem(400, "bad-request"), true},
		{"export lines as documented", "GET", exportURI, "", nil, answer{200, "application/x-ndjson", exportRecordLine + "\n" + `{"end":true,"records":1}` + "\n", nil}, true},
		{"an export that stopped on an error", "GET", exportURI, "", nil, answer{200, "application/x-ndjson", `{"end":false,"records":0,"error":"damaged"}` + "\n", nil}, true},
		{"an export line with a field the document does not name", "GET", exportURI, "", nil, answer{200, "application/x-ndjson",
			strings.Replace(exportRecordLine, `"key":"k1"`, `"key":"k1","body":"secret"`, 1) + "\n" + `{"end":true,"records":1}` + "\n", nil}, false},
		{"an export line without its fingerprint", "GET", exportURI, "", nil, answer{200, "application/x-ndjson",
			strings.Replace(exportRecordLine, `"fingerprint":"9f86d0",`, "", 1) + "\n" + `{"end":true,"records":1}` + "\n", nil}, false},
		{"an export line that is no JSON", "GET", exportURI, "", nil, answer{200, "application/x-ndjson", "scope,key\n", nil}, false},
		{"a body the document refuses, answered 201", "POST", "/v1/tokens", `{"scope":"pay","extra":1}`,
			[]string{"Content-Type", "application/json"},
			answer{201, "application/json", `{"token":"6f1c1b2e-1111-4222-8333-444455556666","scope":"pay","expires_at":"2026-01-01T00:00:00Z"}`, nil}, false},
	} {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(tc.method)
		ctx.Request.SetRequestURI(tc.uri)
		ctx.Request.Header.SetHost("127.0.0.1:9001")
		for i := 0; i+1 < len(tc.reqHdr); i += 2 {
			ctx.Request.Header.Set(tc.reqHdr[i], tc.reqHdr[i+1])
		}
		ctx.Request.SetBodyString(tc.body)
		ctx.SetStatusCode(tc.answer.status)
		ctx.SetContentType(tc.answer.ctype)
		for i := 0; i+1 < len(tc.answer.hdr); i += 2 {
			ctx.Response.Header.Set(tc.answer.hdr[i], tc.answer.hdr[i+1])
		}
		ctx.SetBodyString(tc.answer.body)
		_, err := c.checkPair(&ctx, tc.answer.status)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %s %s -> %d: check = %v, want ok %v", tc.name, tc.method, tc.uri, tc.answer.status, err, tc.ok)
		}
	}
}

// An export request and a record line as the document describes them.
const (
	exportURI        = "/v1/records/export?since=2026-01-02T00:00:00Z&until=2026-01-03T00:00:00Z"
	exportRecordLine = `{"scope":"pay","tenant":"","key":"k1","state":"completed","status_code":201,"fingerprint":"9f86d0",` +
		`"created_at":"2026-01-02T10:00:00Z","completed_at":"2026-01-02T10:00:01Z","reconcile_id":"ch_1"}`
)

// samplePath fills a document path's parameters.
func samplePath(p string) string {
	return strings.NewReplacer("{key}", "k", "{scope}", "pay", "{id}", "n9").Replace(p)
}

// TestOpenAPIRoutes: the route table (routes.go) and the document agree
// both ways: every route is an operation of the document, at its path
// with its method, operationId and x-idemgate-role ("none" for a public
// path), and every operation of the document is a route. Then, on the
// live API, every method the document lists on a path is routed (not 404
// or 405), and every other is 405.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	doc := theContract.doc
	table := (&handlers{}).routes()
	routed := map[string]bool{} // "METHOD /document/path"
	for _, r := range table {
		path := strings.ReplaceAll(r.path, "...}", "}")
		item := doc.Paths.Value(path)
		if item == nil {
			t.Errorf("the table routes %s; the document has no such path", path)
			continue
		}
		for _, o := range r.ops {
			routed[o.method+" "+path] = true
			dop := item.GetOperation(o.method)
			if dop == nil {
				t.Errorf("the table routes %s %s; the document does not list it", o.method, path)
				continue
			}
			role := o.role.String()
			if r.public {
				role = "none"
			}
			if got, _ := dop.Extensions["x-idemgate-role"].(string); dop.OperationID != o.id || got != role {
				t.Errorf("%s %s: the document says operation %q, role %q; the table %q, %q", o.method, path, dop.OperationID, got, o.id, role)
			}
		}
	}
	docPaths := doc.Paths.InMatchingOrder()
	for _, p := range docPaths {
		for method := range doc.Paths.Value(p).Operations() {
			if !routed[method+" "+p] {
				t.Errorf("the document lists %s %s; the table routes no such operation", method, p)
			}
		}
	}
	if len(routed) < 30 {
		t.Fatalf("read %d routes from the table", len(routed))
	}

	ac := startAPIs(t, 1, nil)
	for _, p := range docPaths {
		item := doc.Paths.Value(p)
		for _, m := range []string{"GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"} {
			lookup := m
			if m == "HEAD" {
				lookup = "GET"
			}
			listed := item.GetOperation(lookup) != nil
			r := do(t, m, ac.urls[0]+samplePath(p), "")
			switch {
			case listed && (r.Status == 405 || (r.Status == 404 && strings.Contains(r.Body, "no such endpoint"))):
				t.Errorf("%s %s: the document lists it, the API answered %d %s", m, p, r.Status, r.Body)
			case !listed && r.Status != 405:
				t.Errorf("%s %s: the document does not list it, the API answered %d (want 405)", m, p, r.Status)
			}
		}
	}
}

// TestOpenAPIRoles: every operation's x-idemgate-role is the role the
// token check requires for it ("none" for this document), and
// x-idemgate-open marks those api.open leaves open by default.
func TestOpenAPIRoles(t *testing.T) {
	doc := theContract.doc
	open := map[string]bool{}
	def, err := auth.NewAccess(nil, nil) // the default api.open
	if err != nil {
		t.Fatal(err)
	}
	for p, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			role, _ := op.Extensions["x-idemgate-role"].(string)
			path := samplePath(p)
			want := requiredRole(method, path).String()
			if path == openAPIPath {
				want = "none"
			}
			if role != want {
				t.Errorf("%s %s: x-idemgate-role %q, the token check requires %q", method, p, role, want)
			}
			open[method+" "+p], _ = op.Extensions["x-idemgate-open"].(bool)
			if want := def.Open(path); open[method+" "+p] != want {
				t.Errorf("%s %s: x-idemgate-open %v; open by default: %v", method, p, open[method+" "+p], want)
			}
		}
	}
	if len(open) < 15 {
		t.Fatalf("read %d operations", len(open))
	}
}

// apiKinds are internal/httpx's problem kinds by name: TestOpenAPIProblemTypes
// checks the list against problem.go, so a kind added there is here too.
var apiKinds = map[string]httpx.Kind{
	"AmbiguousPath": httpx.AmbiguousPath, "BadRequest": httpx.BadRequest, "CrossOrigin": httpx.CrossOrigin,
	"HeadersTooLarge": httpx.HeadersTooLarge, "RequestTimeout": httpx.RequestTimeout, "BodyTooLarge": httpx.BodyTooLarge,
	"Forbidden": httpx.Forbidden, "InProgress": httpx.InProgress, "Internal": httpx.Internal, "InvalidJSON": httpx.InvalidJSON,
	"InvalidKey": httpx.InvalidKey, "InvalidScope": httpx.InvalidScope, "InvalidToken": httpx.InvalidToken,
	"InvalidTTL": httpx.InvalidTTL, "InvalidVersion": httpx.InvalidVersion, "KeyReuse": httpx.KeyReuse,
	"Locked": httpx.Locked, "InvalidLockName": httpx.InvalidLockName,
	"MembershipConflict": httpx.MembershipConflict, "Misdirected": httpx.Misdirected, "MethodNotAllowed": httpx.MethodNotAllowed,
	"MissingKey": httpx.MissingKey, "MissingToken": httpx.MissingToken, "NotFound": httpx.NotFound, "NotReady": httpx.NotReady,
	"NotAlive": httpx.NotAlive, "OutcomeUnknown": httpx.OutcomeUnknown, "ReplayUnavailable": httpx.ReplayUnavailable,
	"StaleFence": httpx.StaleFence, "SuspectedDuplicate": httpx.SuspectedDuplicate, "TokenUsed": httpx.TokenUsed, "TooManyRequests": httpx.TooManyRequests,
	"Unauthorized": httpx.Unauthorized, "Unavailable": httpx.Unavailable, "UnknownNode": httpx.UnknownNode,
	"UnsupportedMediaType": httpx.UnsupportedMediaType, "UntrustedTenant": httpx.UntrustedTenant,
	"UpstreamResponseTooLarge": httpx.UpstreamResponseTooLarge, "UpstreamTimeout": httpx.UpstreamTimeout,
	"UpstreamUnreachable": httpx.UpstreamUnreachable, "VersionMismatch": httpx.VersionMismatch,
	"ValueMismatch": httpx.ValueMismatch, "OutOfRange": httpx.OutOfRange, "NotInteger": httpx.NotInteger,
	"WrongType": httpx.WrongType, "BearerRequired": httpx.BearerRequired, "InvalidBearer": httpx.InvalidBearer,
	"JWTKeysUnavailable": httpx.JWTKeysUnavailable,
}

// kindsNamed reads the httpx.Kind names the files named use (httpx.X in
// package api; bare X inside httpx), in the top-level declaration named
// within ("": the whole file).
func kindsNamed(t *testing.T, glob string, qualified bool, within string) []string {
	t.Helper()
	files, _ := filepath.Glob(glob)
	var out []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if within != "" {
				switch d := n.(type) {
				case *ast.FuncDecl:
					return d.Name.Name == within
				case *ast.GenDecl:
					named := false
					for _, sp := range d.Specs {
						if vs, ok := sp.(*ast.ValueSpec); ok {
							named = named || slices.ContainsFunc(vs.Names, func(id *ast.Ident) bool { return id.Name == within })
						}
					}
					return named
				}
			}
			var id string
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && qualified && x.Name == "httpx" {
					id = n.Sel.Name
				}
			case *ast.Ident:
				if !qualified {
					id = n.Name
				}
			}
			if _, ok := apiKinds[id]; ok && !slices.Contains(out, id) {
				out = append(out, id)
			}
			return true
		})
	}
	return out
}

// TestOpenAPIProblemTypes: every problem type the document lists, at its
// status, is a kind of internal/httpx's table with that status; every kind
// the API answers (its own, and those httpx answers for it: refused
// requests, bodies, store errors, form tokens) is listed at its status.
func TestOpenAPIProblemTypes(t *testing.T) {
	// apiKinds is problem.go's whole table.
	src, err := os.ReadFile(filepath.Join("..", "internal", "httpx", "problem.go"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "problem.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var table []string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Values) == len(vs.Names) {
			for i, v := range vs.Values {
				// A kind is a Kind literal, or storeKind(err): a store
				// error's answer, from storeapi.Answers.
				if cl, ok := v.(*ast.CompositeLit); ok {
					if id, ok := cl.Type.(*ast.Ident); ok && id.Name == "Kind" {
						table = append(table, vs.Names[i].Name)
					}
				}
				if call, ok := v.(*ast.CallExpr); ok {
					if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "storeKind" {
						table = append(table, vs.Names[i].Name)
					}
				}
			}
		}
		return true
	})
	slices.Sort(table)
	var listed []string
	for k := range apiKinds {
		listed = append(listed, k)
	}
	slices.Sort(listed)
	if !slices.Equal(table, listed) {
		t.Fatalf("internal/httpx/problem.go's kinds %v; apiKinds lists %v", table, listed)
	}

	// The document's problem answers.
	documented := map[int][]string{} // status -> slugs
	for name, r := range theContract.doc.Components.Responses {
		mt := r.Value.Content.Get("application/problem+json")
		if mt == nil {
			t.Errorf("components.responses.%s carries no problem document", name)
			continue
		}
		s := mt.Schema.Value
		status, _ := s.Properties["status"].Value.Const.(float64)
		for _, v := range s.Properties["type"].Value.Enum {
			slug := strings.TrimPrefix(v.(string), httpx.ProblemBase)
			documented[int(status)] = append(documented[int(status)], slug)
			ok := false
			for _, k := range apiKinds {
				ok = ok || (k.Status == int(status) && k.Slug == slug)
			}
			if !ok {
				t.Errorf("components.responses.%s: %d %s is no kind of internal/httpx's table", name, int(status), slug)
			}
		}
	}
	// What the API can answer.
	used := kindsNamed(t, "*.go", true, "")
	for name, within := range map[string]string{"body.go": "", "refused.go": "", "problem.go": "storeErrors", "token.go": ""} {
		for _, k := range kindsNamed(t, filepath.Join("..", "internal", "httpx", name), false, within) {
			if !slices.Contains(used, k) {
				used = append(used, k)
			}
		}
	}
	for _, name := range used {
		k := apiKinds[name]
		if k == httpx.MethodNotAllowed {
			continue // the answer to a method an endpoint does not list: described in info
		}
		if !slices.Contains(documented[k.Status], k.Slug) {
			t.Errorf("the API answers %s (%d %s); no answer of the document lists it", name, k.Status, k.Slug)
		}
	}
	if len(used) < 20 {
		t.Fatalf("read %d kinds the API answers: %v", len(used), used)
	}
}

// TestAPIRecords: a record the gateway began and completed reads back
// with what it holds; released by hand, it is gone; the hostile forms of
// the path and query are 400, and a read ignores Idempotency-Key.
func TestAPIRecords(t *testing.T) {
	t.Parallel()
	m := memstore.New(t)
	ac := &apiCluster{}
	ac.serve(t, m, prometheus.NewRegistry(), nil)
	u := ac.urls[0]
	ctx := t.Context()
	key := []byte("pay\x00acme\x00order-7")
	res, err := m.Apply(ctx, command.RecordBeginCommand(command.BeginRequest{Key: key, Fingerprint: []byte{0xfe, 0xed}, TTL: time.Hour}))
	if err != nil || res.Code != command.CodeCreated {
		t.Fatalf("begin: %v %+v", err, res)
	}
	res, err = m.Apply(ctx, command.RecordCompleteCommand(command.CompleteRequest{Key: key, Fence: res.Fence, Status: 201, Body: []byte(`{"charge":"ch_1"}`)}))
	if err != nil || res.Code != command.CodeOK {
		t.Fatalf("complete: %v %+v", err, res)
	}
	for _, tc := range []struct {
		method, path string
		hdr          []string
		status       int
		want         string // in the body (or the problem's slug)
	}{
		{"GET", "/v1/records/pay/order-7?tenant=acme", nil, 200, `"state":"completed","fingerprint":"feed"`},
		{"GET", "/v1/records/pay/order-7?tenant=acme", []string{"Idempotency-Key", ""}, 200, `"status_code":201`},
		{"HEAD", "/v1/records/pay/order-7?tenant=acme", nil, 200, ""},
		{"GET", "/v1/records/pay/order-7", nil, 404, "not-found"}, // another tenant's
		{"GET", "/v1/records/pay", nil, 400, "invalid-key"},
		{"GET", "/v1/records/pay/", nil, 400, "invalid-key"},
		{"GET", "/v1/records//order-7", nil, 400, "invalid-key"},
		{"GET", "/v1/records/pay/order-7?tenant=a%00b", nil, 400, "invalid-key"},
		{"POST", "/v1/records/pay/order-7?tenant=acme", nil, 405, "method-not-allowed"},
		{"DELETE", "/v1/records/pay/order-7?tenant=acme", []string{"Idempotency-Key", ""}, 400, "invalid-key"},
		{"DELETE", "/v1/records/pay/order-7?tenant=acme", nil, 200, `"released":true`},
		{"GET", "/v1/records/pay/order-7?tenant=acme", nil, 404, "not-found"},
		{"DELETE", "/v1/records/pay/order-7?tenant=acme", nil, 404, "not-found"},
	} {
		hdr := tc.hdr
		if len(hdr) == 2 && hdr[0] == "Idempotency-Key" {
			hdr = []string{"Idempotency-Key", "bad key with spaces"}
		}
		r := do(t, tc.method, u+tc.path, "", hdr...)
		got := r.Body
		if r.Status >= 400 {
			got = r.ProblemType(t)
		}
		if r.Status != tc.status || !strings.Contains(got, tc.want) {
			t.Errorf("%s %s = %d %s; want %d with %q", tc.method, tc.path, r.Status, r.Body, tc.status, tc.want)
		}
	}
	// What net/http will not send: a key that is no percent-encoding.
	if st, slug, body := rawExchange(t, ac.apis[0].Addr(), "GET /v1/records/pay/%zz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 0); st != 400 || slug != "invalid-key" {
		t.Errorf("GET /v1/records/pay/%%zz = %d %s", st, body)
	}
	if _, err := m.Record(ctx, key, true); err == nil {
		t.Error("the released record is still in the store")
	}
}
