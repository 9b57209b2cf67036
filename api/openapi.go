package api

// GET /v1/openapi.json: the OpenAPI 3.1 document of this API, built into
// the binary. It is generated: each operation from its route's row (its
// method, id and role) and the row's doc, declared beside its handler;
// the rest (info, the components the operations share) from
// api/openapi_base.json. openapi_gen_test.go writes it and fails while
// the file in the repository is not what the rows make; openapi_test.go
// holds every request and answer of the API's tests against it, so it
// says what the code does.

//go:generate go test -run ^TestOpenAPIGenerated$ -args -update-openapi

import (
	_ "embed"
	"encoding/json"
	"strings"

	"github.com/valyala/fasthttp"
)

// openAPIPath is where the document is served. It describes no data, so
// it is served to every caller, token or not (authorize).
const openAPIPath = "/v1/openapi.json"

//go:embed openapi.json
var openAPIDocument []byte

func (h *nodeHandlers) openAPI(ctx *fasthttp.RequestCtx) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("Cache-Control", "no-cache") // a node upgraded in place serves a new one
	ctx.SetBody(openAPIDocument)
}

// openAPIRoutes is the document's own route.
func (h *nodeHandlers) openAPIRoutes() []resource {
	return []resource{{path: openAPIPath, public: true, ops: []op{{method: "GET", id: "openapi", role: read, handle: plain(h.openAPI), doc: opDoc{
		local:       true,
		summary:     "This document",
		description: "The OpenAPI document of the API, as built into the binary. It describes no data: every caller gets it, with or without a token.",
		answers: map[int]string{
			200: `{"description": "The OpenAPI 3.1 document.", "content": {"application/json": {"schema": {"type": "object", "required": ["openapi", "info", "paths"]}}}}`,
			400: "Problem400BadRequest",
			503: "Problem503Unavailable",
		},
	}}}}}
}

// opDoc is an operation of the document beyond its route's row (the
// method, operationId, x-idemgate-role and the security the role asks
// for). The answers every operation has are added to its own: 401 (but on
// a public path), 403, 408, 413, 421 and 431, which the listener answers
// before a route is chosen, 415 for a POST, and but for a local operation
// the store's 500 internal and 503 not-ready or unavailable.
type opDoc struct {
	summary, description string
	// local: answered by this node alone, without the store; it declares
	// its own 503.
	local bool
	// params are the operation's parameters: a name of
	// components.parameters, or a parameter object (JSON, "{" first).
	params []string
	// body is the requestBody object (JSON); "": none.
	body string
	// answers are the operation's own answers by status: a name of
	// components.responses (a problem answer), or a response object
	// (JSON, "{" first).
	answers map[int]string
}

// jsonAnswer is a response object: desc, and a JSON body of the schema
// components.schemas names.
func jsonAnswer(desc, schema string) string {
	return mustJSON(struct {
		Description string         `json:"description"`
		Content     map[string]any `json:"content"`
	}{desc, jsonContent(schema)})
}

// jsonRequest is a requestBody object: a JSON body, required, of the
// schema components.schemas names.
func jsonRequest(desc, schema string) string {
	return mustJSON(struct {
		Required    bool           `json:"required"`
		Description string         `json:"description"`
		Content     map[string]any `json:"content"`
	}{true, desc, jsonContent(schema)})
}

func jsonContent(schema string) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": map[string]string{"$ref": "#/components/schemas/" + schema}}}
}

// mustJSON is v as JSON, "<" and "&" as they are; v is a literal of this
// package's rows.
func mustJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("api: " + err.Error())
	}
	return strings.TrimSuffix(b.String(), "\n")
}
