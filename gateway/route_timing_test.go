package gateway

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/config"
)

// BenchmarkMatchRoute measures the route match of one request against the
// test routes: a path spelled as its route (the hot path: no allocation),
// one no route names, and paths that are not plain (read every way a
// server might read them).
//
//	go test -run XXX -bench MatchRoute -benchmem ./gateway
func BenchmarkMatchRoute(b *testing.B) {
	file, err := config.Parse([]byte(testRoutes))
	if err != nil {
		b.Fatal(err)
	}
	routes, err := compileRoutes(file.Routes)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, method, uri string }{
		{"route", "POST", "/pay"},
		{"prefix-route", "PUT", "/items/7"},
		{"passthrough", "POST", "/other/thing"},
		{"passthrough-file", "GET", "/static/app.js"},
		{"encoded-id", "PUT", "/orders/a%20b?key=k"},
		{"encoded-alias", "POST", "/p%61y"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod(bc.method)
			ctx.Request.SetRequestURI(bc.uri)
			b.ReportAllocs()
			for b.Loop() {
				matchRoute(routes, &ctx)
			}
		})
	}
}
