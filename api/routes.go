package api

// The API's routes: one table, read by the router (mux.go), the token check
// (auth.go), and the tests that generate api/openapi.json from it
// (openapi_gen_test.go) and hold the API to the document. Each group's
// file declares its routes beside their handlers, each operation with its
// part of the document (opDoc) and the store operations it proposes, whose
// every result code it answers (TestEveryCodeAnswered): a new endpoint is
// a row and a handler in one file.

import (
	"slices"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/auth"
	"github.com/idemgate/idemgate/internal/httpx"
)

// Roles as the rows name them (auth.go: what each may do).
const (
	read  = auth.RoleRead
	app   = auth.RoleApp
	admin = auth.RoleAdmin
)

// routes is the table over g's handlers, in the document's order.
func (g *handlers) routes() []resource {
	return slices.Concat(
		g.node.routes(), g.node.openAPIRoutes(), g.tokens.routes(),
		g.data.kvRoutes(), g.data.exportRoutes(), g.data.recordRoutes(),
		g.once.routes(), g.locks.routes(), g.data.suspectRoutes(), g.data.stuckRoutes(),
		g.cluster.routes(), g.node.snapshotRoutes(),
	)
}

// strays answer the paths under a prefix that no route takes.
var strays = []stray{
	{"/v1/once/", onceStray},
	{"/v1/records/", func(ctx *fasthttp.RequestCtx, _ string) {
		httpx.WriteProblem(ctx, httpx.InvalidKey, "want /v1/records/{scope}/{key}")
	}},
}

// roles is the table without handlers, for the token check.
var roles = newMux((&handlers{}).routes(), strays)

// requiredRole is the least role that may send method to path: the
// route's; reads are every role's but the backup's and the export's, an
// application writes the KV API, form tokens, once claims and locks, and
// every other change (releasing records, membership, and any endpoint
// added later) is an administrator's.
func requiredRole(method, path string) auth.Role { return roles.role(method, path) }

// plain, with1 and with2 adapt a handler of no, one or two path
// parameters.
func plain(h fasthttp.RequestHandler) handler {
	return func(ctx *fasthttp.RequestCtx, _ []string) { h(ctx) }
}

func with1(h func(*fasthttp.RequestCtx, string)) handler {
	return func(ctx *fasthttp.RequestCtx, p []string) { h(ctx, p[0]) }
}

func with2(h func(*fasthttp.RequestCtx, string, string)) handler {
	return func(ctx *fasthttp.RequestCtx, p []string) { h(ctx, p[0], p[1]) }
}
