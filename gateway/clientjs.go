package gateway

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
)

// clientJS is the browser helper: idem.fetch and idem.form (client.js, a
// dependency-free script). The gateway serves it at ClientJSPath so a page
// behind the gateway loads it from its own origin.
//
//go:embed client.js
var clientJS []byte

// ClientJSPath is where the gateway listener serves the browser helper.
const ClientJSPath = "/_idem/client.js"

// clientJSTag is the helper's ETag: a digest of its bytes, so a browser
// revalidates it cheaply and a new build's helper is never stale.
var clientJSTag = func() []byte {
	sum := sha256.Sum256(clientJS)
	return []byte(`"` + hex.EncodeToString(sum[:12]) + `"`)
}()

// serveClientJS is GET (or HEAD) ClientJSPath: the helper, cacheable, with
// its ETag; 304 when the browser has it.
func serveClientJS(ctx *fasthttp.RequestCtx) {
	if !ctx.IsGet() && !ctx.IsHead() {
		httpx.WriteProblem(ctx, httpx.MethodNotAllowed, "use GET")
		ctx.Response.Header.Set("Allow", "GET, HEAD") // after the problem: it resets the answer
		return
	}
	ctx.Response.Header.SetBytesV("ETag", clientJSTag)
	ctx.Response.Header.Set("Cache-Control", "public, max-age=300")
	ctx.Response.Header.Set("X-Content-Type-Options", "nosniff")
	if inm := ctx.Request.Header.Peek("If-None-Match"); len(inm) > 0 && etagListHas(inm, clientJSTag) {
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return
	}
	ctx.SetContentType("text/javascript; charset=utf-8")
	ctx.SetBody(clientJS)
}

// etagListHas reports whether an If-None-Match list names tag (weakly, as
// RFC 9110 13.1.2 compares for GET) or is "*".
func etagListHas(list, tag []byte) bool {
	for len(list) > 0 {
		var e []byte
		e, list = nextElement(list)
		if string(e) == "*" || bytes.Equal(bytes.TrimPrefix(e, []byte("W/")), tag) {
			return true
		}
	}
	return false
}
