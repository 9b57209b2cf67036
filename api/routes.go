package api

// The API's routes: one table, read by the router (mux.go), the token
// check (auth.go) and the tests that hold api/openapi.json to it both ways
// (openapi_test.go: every operation here is in the document with its
// method, id and role, and every operation of the document is here).
// A new endpoint is a row here, its handler in its group's file, and its
// operation in the document.

import (
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

// routes is the table over g's handlers.
func (g *handlers) routes() []resource {
	d, c, n := g.data, g.cluster, g.node
	return []resource{
		{path: "/healthz", ops: []op{{"GET", "healthz", read, plain(n.healthz), ""}}},
		{path: "/readyz", ops: []op{{"GET", "readyz", read, plain(n.readyz), ""}}},
		{path: "/metrics", ops: []op{{"GET", "metrics", read, plain(n.serveMetrics), ""}}},
		{path: openAPIPath, public: true, ops: []op{{"GET", "openapi", read, plain(n.openAPI), ""}}},

		{path: "/v1/tokens", ops: []op{{"POST", "issueToken", app, plain(g.tokens.issueToken), ""}}},
		{path: "/v1/tokens/consume", ops: []op{{"POST", "consumeToken", app, plain(g.tokens.consumeToken), ""}}},

		{path: "/v1/kv/{key...}", check: kvPath, ops: []op{
			{"GET", "kvGet", read, with1(d.kvGet), ""},
			{"PUT", "kvPut", app, with1(d.kvPut), ""},
			{"POST", "kvIncr", app, with1(d.kvIncr), "an increment"},
			{"DELETE", "kvDelete", app, with1(d.kvDelete), ""},
		}},

		{path: exportPath, ops: []op{{"GET", "recordsExport", admin, plain(d.exportRecords), ""}}},
		{path: "/v1/records/{scope}/{key...}", check: recordPath, ops: []op{
			{"GET", "recordGet", read, with2(d.recordGet), ""},
			{"DELETE", "recordRelease", admin, with2(d.recordRelease), ""},
		}},

		{path: "/v1/once/{scope}/{key}", check: oncePath, ops: []op{{"GET", "getClaim", read, with2(g.once.onceGet), ""}}},
		{path: "/v1/once/{scope}/{key}/begin", check: oncePath, ops: []op{{"POST", "beginOnce", app, with2(g.once.onceBegin), ""}}},
		{path: "/v1/once/{scope}/{key}/renew", check: oncePath, ops: []op{{"POST", "renewOnce", app, with2(g.once.onceRenew), ""}}},
		{path: "/v1/once/{scope}/{key}/complete", check: oncePath, ops: []op{{"POST", "completeOnce", app, with2(g.once.onceComplete), ""}}},
		{path: "/v1/once/{scope}/{key}/release", check: oncePath, ops: []op{{"POST", "releaseOnce", app, with2(g.once.onceRelease), ""}}},

		{path: "/v1/locks/{name...}", check: lockPath, methodFirst: true, ops: []op{
			{"GET", "getLock", read, with1(g.locks.lockGet), ""},
			{"POST", "acquireLock", app, with1(g.locks.lockAcquire), ""},
			{"DELETE", "releaseLock", app, with1(g.locks.lockRelease), ""},
		}},
		{path: "/v1/locks/{name...}/renew", check: lockPath, methodFirst: true, ops: []op{{"POST", "renewLock", app, with1(g.locks.lockRenew), ""}}},

		{path: "/v1/suspects", ops: []op{{"GET", "suspects", read, plain(d.listSuspects), ""}}},
		{path: "/v1/stuck", ops: []op{{"GET", "stuck", read, plain(d.listStuck), ""}}},
		{path: "/v1/status", ops: []op{{"GET", "status", read, plain(n.status), ""}}},

		{path: "/v1/cluster", ops: []op{{"GET", "cluster", read, plain(c.cluster), ""}}},
		{path: "/v1/cluster/nodes", ops: []op{{"POST", "addNode", admin, plain(c.addNode), ""}}},
		{path: "/v1/cluster/nodes/{id...}", check: nodePath, methodFirst: true, ops: []op{{"DELETE", "removeNode", admin, with1(c.removeNode), ""}}},
		{path: "/v1/cluster/nodes/{id...}/promote", check: nodePath, methodFirst: true, ops: []op{{"POST", "promoteNode", admin, with1(c.promoteNode), ""}}},

		{path: "/v1/snapshot", ops: []op{
			{"GET", "backup", admin, plain(n.snapshot), ""},
			{"POST", "takeSnapshot", admin, plain(n.takeSnapshot), ""},
		}},
	}
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
