package httpx

import (
	"encoding/json"
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
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

// Kind is one kind of problem answer: its status, its type slug and
// its title, each kind defined once, here. Call sites name a kind, never a
// status or a slug.
type Kind struct {
	Status int
	Slug   string
	Title  string
}

// The kinds of problem answers. Those of the store's errors are the
// store's table's (storeapi.Answers), which the Redis face reads too.
var (
	AmbiguousPath   = Kind{fasthttp.StatusBadRequest, "ambiguous-path", "Path or method is an alias of a route"}
	BadRequest      = storeKind(command.ErrBadCommand)
	CrossOrigin     = Kind{fasthttp.StatusForbidden, "cross-origin", "Request from a web page of another origin"}
	HeadersTooLarge = Kind{fasthttp.StatusRequestHeaderFieldsTooLarge, "bad-request", "Bad request"}
	RequestTimeout  = Kind{fasthttp.StatusRequestTimeout, "bad-request", "Bad request"}
	BodyTooLarge    = storeKind(storeapi.ErrTooLarge)
	Forbidden       = Kind{fasthttp.StatusForbidden, "forbidden", "Not allowed for this token's role"}
	InProgress      = Kind{fasthttp.StatusConflict, "in-progress", "Request in progress"}
	Internal        = storeKind(command.ErrStorage) // also what no row of the store's answers answers
	// BearerRequired and InvalidBearer refuse a request without a valid
	// bearer JWT on a route that requires one; JWTKeysUnavailable, one that
	// came while no key to check it with could be loaded.
	BearerRequired           = Kind{fasthttp.StatusUnauthorized, "bearer-required", "Bearer token required"}
	InvalidBearer            = Kind{fasthttp.StatusUnauthorized, "invalid-bearer-token", "Invalid bearer token"}
	JWTKeysUnavailable       = Kind{fasthttp.StatusServiceUnavailable, "jwt-keys-unavailable", "Token keys unavailable"}
	InvalidJSON              = Kind{fasthttp.StatusBadRequest, "invalid-json", "Invalid JSON body"}
	InvalidKey               = storeKind(storeapi.ErrReservedKey)
	InvalidScope             = Kind{fasthttp.StatusBadRequest, "invalid-scope", "Invalid scope"}
	InvalidToken             = Kind{fasthttp.StatusBadRequest, "invalid-token", "Invalid token"}
	InvalidTTL               = Kind{fasthttp.StatusBadRequest, "invalid-ttl", "Invalid TTL"}
	InvalidVersion           = Kind{fasthttp.StatusBadRequest, "invalid-version", "Invalid If-Match version"}
	Locked                   = Kind{fasthttp.StatusConflict, "locked", "Lock held by another"}
	InvalidLockName          = Kind{fasthttp.StatusBadRequest, "invalid-lock-name", "Invalid lock name"}
	KeyReuse                 = Kind{fasthttp.StatusUnprocessableEntity, "key-reuse", "Idempotency key reused"}
	MembershipConflict       = Kind{fasthttp.StatusConflict, "membership-conflict", "Membership change refused"}
	Misdirected              = Kind{fasthttp.StatusMisdirectedRequest, "misdirected-request", "Host not served here"}
	MethodNotAllowed         = Kind{fasthttp.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed"}
	MissingKey               = Kind{fasthttp.StatusBadRequest, "missing-key", "Idempotency key required"}
	MissingToken             = Kind{fasthttp.StatusBadRequest, "missing-token", "Form token required"}
	NotFound                 = Kind{fasthttp.StatusNotFound, "not-found", "Not found"}
	NotReady                 = storeKind(storeapi.ErrRemoved) // what its readyz says
	NotAlive                 = Kind{fasthttp.StatusServiceUnavailable, "not-alive", "Node stopped"}
	OutcomeUnknown           = Kind{fasthttp.StatusConflict, "outcome-unknown", "Outcome unknown"}
	ReplayUnavailable        = Kind{fasthttp.StatusConflict, "replay-unavailable", "Stored response unavailable"}
	StaleFence               = Kind{fasthttp.StatusConflict, "stale-fence", "Fence no longer holds the claim or lock"}
	SuspectedDuplicate       = Kind{fasthttp.StatusConflict, "suspected-duplicate", "Suspected duplicate"}
	TokenUsed                = Kind{fasthttp.StatusConflict, "token-used", "Token already used"}
	TooManyRequests          = Kind{fasthttp.StatusTooManyRequests, "too-many-requests", "Too many requests"}
	Unauthorized             = Kind{fasthttp.StatusUnauthorized, "unauthorized", "Authentication required"}
	Unavailable              = storeKind(storeapi.ErrNoLeader) // no quorum, deadline, shutdown, disk, clock: fail closed
	UnknownNode              = Kind{fasthttp.StatusNotFound, "unknown-node", "Unknown node"}
	UnsupportedMediaType     = Kind{fasthttp.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type"}
	UntrustedTenant          = Kind{fasthttp.StatusBadRequest, "untrusted-tenant", "Tenant header from an untrusted client"}
	UpstreamResponseTooLarge = Kind{fasthttp.StatusBadGateway, "upstream-response-too-large", "Upstream response too large"}
	UpstreamTimeout          = Kind{fasthttp.StatusGatewayTimeout, "upstream-timeout", "Upstream timed out"}
	UpstreamUnreachable      = Kind{fasthttp.StatusBadGateway, "upstream-unreachable", "Upstream unreachable"}
	VersionMismatch          = Kind{fasthttp.StatusPreconditionFailed, "version-mismatch", "Version moved"}
	ValueMismatch            = Kind{fasthttp.StatusPreconditionFailed, "value-mismatch", "Value differs"}
	OutOfRange               = Kind{fasthttp.StatusConflict, "out-of-range", "Out of range"}
	NotInteger               = Kind{fasthttp.StatusConflict, "not-integer", "Not an integer"}
	// WrongType: a key that holds a list (the Redis protocol's LPUSH):
	// /v1/kv reads and edits strings.
	WrongType = storeKind(command.ErrWrongType)
)

// WriteProblem answers with a problem document of kind k. It resets the
// response: a header that goes with the problem (Allow, ETag) is set after.
func WriteProblem(ctx *fasthttp.RequestCtx, k Kind, detail string) {
	body := problemJSON(k, detail)
	ctx.Response.Reset()
	ctx.SetStatusCode(k.Status)
	ctx.SetContentType("application/problem+json")
	if k.Status == fasthttp.StatusServiceUnavailable || k == InProgress {
		ctx.Response.Header.Set("Retry-After", "1")
	}
	ctx.SetBody(body)
}

// problemJSON is the problem document of kind k.
func problemJSON(k Kind, detail string) []byte {
	b, _ := json.Marshal(Problem{Type: ProblemBase + k.Slug, Title: k.Title, Status: k.Status, Detail: detail})
	return b
}

// storeKind is the kind of err's row of the store's answers.
func storeKind(err error) Kind { return Kind(storeapi.ProblemOf(err)) }

// WriteError answers an error from the store by the first row of the
// store's answers (storeapi.Answers) that has an HTTP answer and whose
// error it is; an error of none of them is a 500 whose detail is the error.
func WriteError(ctx *fasthttp.RequestCtx, err error) {
	for _, a := range storeapi.Answers {
		if a.HTTP.Status != 0 && errors.Is(err, a.Err) {
			WriteProblem(ctx, Kind(a.HTTP), err.Error())
			return
		}
	}
	WriteProblem(ctx, Internal, err.Error())
}

// WriteJSON answers with v as a JSON body and status; a v that does not
// marshal is a 500.
func WriteJSON(ctx *fasthttp.RequestCtx, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		WriteProblem(ctx, Internal, err.Error())
		return
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(append(body, '\n'))
}
