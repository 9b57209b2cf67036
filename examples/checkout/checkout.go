// Package checkout is the example checkout page: a payment form wired with
// the idemgate browser helper (idem.form), which the gateway serves at
// /_idem/client.js. examples/payments serves it at /checkout, so behind the
// gateway the page, the helper and POST /pay share one origin.
package checkout

import (
	_ "embed"
	"net/http"
)

//go:embed index.html
var page []byte

// Path is where the page is served.
const Path = "/checkout"

// Handler serves the page.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(page)
	})
}
