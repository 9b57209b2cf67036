package api

// api/openapi.json is generated: its operations from the route table
// (each row's method, id and role, and its doc beside its handler), the
// rest from api/openapi_base.json. go generate ./api (or go test ./api
// -run TestOpenAPIGenerated -args -update-openapi) writes it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/idemgate/idemgate/auth"
)

var updateOpenAPI = flag.Bool("update-openapi", false, "write api/openapi.json from the route table and api/openapi_base.json")

// TestOpenAPIGenerated: api/openapi.json, which the API serves, is what
// the route table and api/openapi_base.json make.
func TestOpenAPIGenerated(t *testing.T) {
	want, err := generateOpenAPI((&handlers{}).routes())
	if err != nil {
		t.Fatal(err)
	}
	if *updateOpenAPI {
		if err := os.WriteFile("openapi.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		line := 1 + bytes.Count(want[:commonPrefix(got, want)], []byte("\n"))
		t.Fatalf("api/openapi.json is not what the route table makes (from line %d on): run go generate ./api", line)
	}
}

// TestOpenAPIGeneratedBites: a row's change reaches the document, and a
// doc that does not make one is refused.
func TestOpenAPIGeneratedBites(t *testing.T) {
	base, err := generateOpenAPI((&handlers{}).routes())
	if err != nil {
		t.Fatal(err)
	}
	// edit is the table with f applied to the KV path's first operation.
	edit := func(f func(o *op)) []resource {
		tb := (&handlers{}).routes() // each call makes its rows anew
		for i := range tb {
			if tb[i].path == "/v1/kv/{key...}" {
				f(&tb[i].ops[0])
			}
		}
		return tb
	}
	changed := edit(func(o *op) { o.doc.summary += "!" })
	if doc, err := generateOpenAPI(changed); err != nil || bytes.Equal(doc, base) {
		t.Errorf("a summary changed: the document is the same (%v)", err)
	}
	for name, f := range map[string]func(o *op){
		"an answer that is no JSON":        func(o *op) { o.doc.answers[200] = "{nope" },
		"a common answer declared again":   func(o *op) { o.doc.answers[401] = "Problem401Unauthorized" },
		"a parameter that is no JSON":      func(o *op) { o.doc.params = []string{"{nope"} },
		"no answers":                       func(o *op) { o.doc.answers = nil },
		"no summary":                       func(o *op) { o.doc.summary = "" },
		"a request body that is no object": func(o *op) { o.doc.body = "[]" },
	} {
		if _, err := generateOpenAPI(edit(f)); err == nil {
			t.Errorf("%s: generated", name)
		}
	}
}

// commonPrefix is how many bytes a and b share from their start.
func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// generateOpenAPI is the document of table: api/openapi_base.json's
// members, the paths in the table's order between them.
func generateOpenAPI(table []resource) ([]byte, error) {
	raw, err := os.ReadFile("openapi_base.json")
	if err != nil {
		return nil, err
	}
	var base struct {
		OpenAPI    json.RawMessage `json:"openapi"`
		Info       json.RawMessage `json:"info"`
		Servers    json.RawMessage `json:"servers"`
		Security   json.RawMessage `json:"security"`
		Components json.RawMessage `json:"components"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields() // paths among them: the table's
	if err := dec.Decode(&base); err != nil {
		return nil, fmt.Errorf("api/openapi_base.json: %w", err)
	}
	open, err := auth.NewAccess(nil, nil) // the paths api.open leaves open by default
	if err != nil {
		return nil, err
	}
	var paths object
	for _, r := range table {
		path := strings.ReplaceAll(r.path, "...}", "}")
		var item object
		if len(r.params) > 0 {
			var ps []json.RawMessage
			for _, p := range r.params {
				ps = append(ps, ref("parameters", p))
			}
			item = append(item, member{"parameters", ps})
		}
		for _, o := range r.ops {
			op, err := operation(o, r.public, open.Open(path))
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", o.method, path, err)
			}
			item = append(item, member{strings.ToLower(o.method), op})
		}
		paths = append(paths, member{path, item})
	}
	doc := struct {
		OpenAPI    json.RawMessage `json:"openapi"`
		Info       json.RawMessage `json:"info"`
		Servers    json.RawMessage `json:"servers"`
		Security   json.RawMessage `json:"security"`
		Paths      object          `json:"paths"`
		Components json.RawMessage `json:"components"`
	}{base.OpenAPI, base.Info, base.Servers, base.Security, paths, base.Components}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// docOperation is an operation of the document, its members in the
// document's order.
type docOperation struct {
	OperationID string            `json:"operationId"`
	Summary     string            `json:"summary"`
	Description string            `json:"description"`
	Role        string            `json:"x-idemgate-role"`
	Open        bool              `json:"x-idemgate-open,omitempty"`
	Security    json.RawMessage   `json:"security"`
	Parameters  []json.RawMessage `json:"parameters,omitempty"`
	RequestBody json.RawMessage   `json:"requestBody,omitempty"`
	Responses   object            `json:"responses"`
}

// operation is o's operation: its row, its doc, and the answers every
// operation has.
func operation(o op, public, open bool) (*docOperation, error) {
	d := o.doc
	if d.summary == "" || d.description == "" || len(d.answers) == 0 {
		return nil, errors.New("the row's doc needs a summary, a description and its answers")
	}
	op := &docOperation{OperationID: o.id, Summary: d.summary, Description: d.description, Role: o.role.String(),
		Open: open, Security: json.RawMessage(`[{"bearer": []}, {}]`)}
	if public {
		op.Role, op.Security = "none", json.RawMessage(`[{}]`)
	}
	for _, p := range d.params {
		r, err := refOrObject("parameters", p)
		if err != nil {
			return nil, fmt.Errorf("parameter: %w", err)
		}
		op.Parameters = append(op.Parameters, r)
	}
	if d.body != "" {
		r, err := refOrObject("", d.body)
		if err != nil {
			return nil, fmt.Errorf("request body: %w", err)
		}
		op.RequestBody = r
	}
	answers := commonAnswers(o.method, public, d.local)
	for status, a := range d.answers {
		if _, ok := answers[status]; ok {
			return nil, fmt.Errorf("answer %d: every operation has it already (commonAnswers)", status)
		}
		answers[status] = a
	}
	for _, status := range slices.Sorted(maps.Keys(answers)) {
		r, err := refOrObject("responses", answers[status])
		if err != nil {
			return nil, fmt.Errorf("answer %d: %w", status, err)
		}
		op.Responses = append(op.Responses, member{strconv.Itoa(status), r})
	}
	return op, nil
}

// commonAnswers are the problems every operation may answer before its
// handler runs: the token check's 401 (but on a public path), the browser
// check's 403, what the listener refuses (408, 413, 431), a Host it does
// not serve (421), and for a POST a form's content type (415); and but for
// a local operation, the store's (storeapi.Answers): 500 internal, 503
// not-ready or unavailable.
func commonAnswers(method string, public, local bool) map[int]string {
	a := map[int]string{401: "Problem401Unauthorized", 403: "Problem403CrossOriginForbidden", 408: "Problem408BadRequest",
		413: "Problem413BodyTooLarge", 421: "Problem421MisdirectedRequest", 431: "Problem431BadRequest"}
	if !local {
		a[500], a[503] = "Problem500Internal", "Problem503NotReadyUnavailable"
	}
	if public {
		delete(a, 401)
		a[403] = "Problem403CrossOrigin"
	}
	if method == "POST" {
		a[415] = "Problem415UnsupportedMediaType"
	}
	return a
}

// refOrObject is s as the document holds it: a JSON object as it is, or a
// reference to components.<kind>.<s>.
func refOrObject(kind, s string) (json.RawMessage, error) {
	if !strings.HasPrefix(s, "{") {
		if kind == "" {
			return nil, fmt.Errorf("%.40q: want a JSON object", s)
		}
		return ref(kind, s), nil
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("%.40q: %w", s, err)
	}
	return json.RawMessage(s), nil
}

func ref(kind, name string) json.RawMessage {
	return json.RawMessage(`{"$ref": "#/components/` + kind + `/` + name + `"}`)
}

// object is a JSON object whose members keep their order.
type (
	object []member
	member struct {
		name  string
		value any
	}
)

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(m.name); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if err := enc.Encode(m.value); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
