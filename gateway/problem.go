package gateway

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/raftstore"
)

// ProblemBase prefixes every problem type; the slug after it names the case
// (missing-key, in-progress, ...).
const ProblemBase = "https://idemgate.dev/problems/"

// Problem is an RFC 9457 problem document.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// problemKind is one kind of problem answer: its status, its type slug and
// its title, each kind defined once, here. Call sites name a kind, never a
// status or a slug.
type problemKind struct {
	status int
	slug   string
	title  string
}

// The kinds of problem answers.
var (
	probAmbiguousPath            = problemKind{fasthttp.StatusBadRequest, "ambiguous-path", "Path or method is an alias of a route"}
	probBadRequest               = problemKind{fasthttp.StatusBadRequest, "bad-request", "Bad request"}
	probCrossOrigin              = problemKind{fasthttp.StatusForbidden, "cross-origin", "Request from a web page of another origin"}
	probHeadersTooLarge          = problemKind{fasthttp.StatusRequestHeaderFieldsTooLarge, "bad-request", "Bad request"}
	probRequestTimeout           = problemKind{fasthttp.StatusRequestTimeout, "bad-request", "Bad request"}
	probBodyTooLarge             = problemKind{fasthttp.StatusRequestEntityTooLarge, "body-too-large", "Request body too large"}
	probForbidden                = problemKind{fasthttp.StatusForbidden, "forbidden", "Not allowed for this token's role"}
	probInProgress               = problemKind{fasthttp.StatusConflict, "in-progress", "Request in progress"}
	probInternal                 = problemKind{fasthttp.StatusInternalServerError, "internal", "Internal error"}
	probInvalidJSON              = problemKind{fasthttp.StatusBadRequest, "invalid-json", "Invalid JSON body"}
	probInvalidKey               = problemKind{fasthttp.StatusBadRequest, "invalid-key", "Invalid key"}
	probInvalidScope             = problemKind{fasthttp.StatusBadRequest, "invalid-scope", "Invalid scope"}
	probInvalidToken             = problemKind{fasthttp.StatusBadRequest, "invalid-token", "Invalid token"}
	probInvalidTTL               = problemKind{fasthttp.StatusBadRequest, "invalid-ttl", "Invalid TTL"}
	probInvalidVersion           = problemKind{fasthttp.StatusBadRequest, "invalid-version", "Invalid If-Match version"}
	probKeyReuse                 = problemKind{fasthttp.StatusUnprocessableEntity, "key-reuse", "Idempotency key reused"}
	probMembershipConflict       = problemKind{fasthttp.StatusConflict, "membership-conflict", "Membership change refused"}
	probMisdirected              = problemKind{fasthttp.StatusMisdirectedRequest, "misdirected-request", "Host not served here"}
	probMethodNotAllowed         = problemKind{fasthttp.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed"}
	probMissingKey               = problemKind{fasthttp.StatusBadRequest, "missing-key", "Idempotency key required"}
	probMissingToken             = problemKind{fasthttp.StatusBadRequest, "missing-token", "Form token required"}
	probNotFound                 = problemKind{fasthttp.StatusNotFound, "not-found", "Not found"}
	probNotReady                 = problemKind{fasthttp.StatusServiceUnavailable, "not-ready", "Node not ready"}
	probNotAlive                 = problemKind{fasthttp.StatusServiceUnavailable, "not-alive", "Node stopped"}
	probOutcomeUnknown           = problemKind{fasthttp.StatusConflict, "outcome-unknown", "Outcome unknown"}
	probReplayUnavailable        = problemKind{fasthttp.StatusConflict, "replay-unavailable", "Stored response unavailable"}
	probSuspectedDuplicate       = problemKind{fasthttp.StatusConflict, "suspected-duplicate", "Suspected duplicate"}
	probTokenUsed                = problemKind{fasthttp.StatusConflict, "token-used", "Token already used"}
	probTooManyRequests          = problemKind{fasthttp.StatusTooManyRequests, "too-many-requests", "Too many requests"}
	probUnauthorized             = problemKind{fasthttp.StatusUnauthorized, "unauthorized", "Authentication required"}
	probUnavailable              = problemKind{fasthttp.StatusServiceUnavailable, "unavailable", "Store unavailable"}
	probUnknownNode              = problemKind{fasthttp.StatusNotFound, "unknown-node", "Unknown node"}
	probUnsupportedMediaType     = problemKind{fasthttp.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type"}
	probUntrustedTenant          = problemKind{fasthttp.StatusBadRequest, "untrusted-tenant", "Tenant header from an untrusted client"}
	probUpstreamResponseTooLarge = problemKind{fasthttp.StatusBadGateway, "upstream-response-too-large", "Upstream response too large"}
	probUpstreamTimeout          = problemKind{fasthttp.StatusGatewayTimeout, "upstream-timeout", "Upstream timed out"}
	probUpstreamUnreachable      = problemKind{fasthttp.StatusBadGateway, "upstream-unreachable", "Upstream unreachable"}
	probVersionMismatch          = problemKind{fasthttp.StatusPreconditionFailed, "version-mismatch", "Version moved"}
)

// writeProblem answers with a problem document of kind k. It resets the
// response: a header that goes with the problem (Allow, ETag) is set after.
func writeProblem(ctx *fasthttp.RequestCtx, k problemKind, detail string) {
	body, _ := json.Marshal(Problem{Type: ProblemBase + k.slug, Title: k.title, Status: k.status, Detail: detail})
	ctx.Response.Reset()
	ctx.SetStatusCode(k.status)
	ctx.SetContentType("application/problem+json")
	if k.status == fasthttp.StatusServiceUnavailable || k == probInProgress {
		ctx.Response.Header.Set("Retry-After", "1")
	}
	ctx.SetBody(body)
}

// storeErrors maps the store's errors to answers, in order; an error of
// none of them is a 500 whose detail is the error.
var storeErrors = []struct {
	is   func(error) bool
	kind problemKind
}{
	{func(err error) bool { return errors.Is(err, raftstore.ErrRemoved) }, probNotReady}, // what its readyz says
	{raftstore.Unavailable, probUnavailable},                                             // no quorum, deadline, shutdown, disk, clock: fail closed
	{func(err error) bool { return errors.Is(err, fsm.ErrBadCommand) }, probBadRequest},
	{func(err error) bool { return errors.Is(err, raftstore.ErrTooLarge) }, probBodyTooLarge},
	{func(err error) bool { return errors.Is(err, raftstore.ErrReservedKey) }, probInvalidKey},
}

// writeStoreError answers an error from the store by storeErrors.
func writeStoreError(ctx *fasthttp.RequestCtx, err error) {
	for _, e := range storeErrors {
		if e.is(err) {
			writeProblem(ctx, e.kind, err.Error())
			return
		}
	}
	writeProblem(ctx, probInternal, err.Error())
}

func writeJSON(ctx *fasthttp.RequestCtx, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeProblem(ctx, probInternal, err.Error())
		return
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(append(body, '\n'))
}

func etag(version uint64) string { return `"` + strconv.FormatUint(version, 10) + `"` }
