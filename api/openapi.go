package api

// GET /v1/openapi.json: the OpenAPI 3.1 document of this API, built into
// the binary. openapi_test.go holds every request and answer of the API's
// tests against it, and the router's paths against its paths, so it says
// what the code does.

import (
	_ "embed"

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
