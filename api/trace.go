package api

import (
	"context"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"

	"github.com/idemgate/idemgate/tracing"
)

// Tracing (Config.Tracer; package tracing exports the spans): a write (any
// method but GET and HEAD) gets a server span, the child of the
// traceparent it came with, named by the resource's path as the OpenAPI
// document writes it (/v1/kv/{key...}: never the key). Its store call is
// made under the span (writeCtx), so the store's spans are its children.
// Reads are not traced. With a nil Tracer nothing here runs.

// serve routes the request, inside a server span when it is a write and
// tracing is on.
func (a *API) serve(ctx *fasthttp.RequestCtx, method, path string) {
	if a.cfg.Tracer == nil || method == fasthttp.MethodGet || method == fasthttp.MethodHead {
		a.mux.serve(ctx, method, path)
		return
	}
	route := "unmatched"
	if r, _ := a.mux.resolve(path); r != nil {
		route = r.path
	}
	span := tracing.StartServer(a.cfg.Tracer, ctx, "api "+method+" "+route)
	a.mux.serve(ctx, method, path)
	tracing.EndServer(ctx, span, attribute.String("http.route", route))
}

// writeOpCtx is opCtx under the request's span, when it has one.
func (b *base) writeOpCtx(ctx *fasthttp.RequestCtx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(tracing.RequestContext(ctx), b.cfg.OpTimeout)
}
