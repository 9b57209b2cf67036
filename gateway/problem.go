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

var problemTitles = map[string]string{
	"bad-request":         "Bad request",
	"invalid-key":         "Invalid key",
	"invalid-ttl":         "Invalid TTL",
	"invalid-json":        "Invalid JSON body",
	"invalid-scope":       "Invalid scope",
	"invalid-token":       "Invalid token",
	"invalid-version":     "Invalid If-Match version",
	"not-found":           "Not found",
	"method-not-allowed":  "Method not allowed",
	"exists":              "Key exists",
	"version-mismatch":    "Version moved",
	"token-used":          "Token already used",
	"unavailable":         "Store unavailable",
	"not-ready":           "Node not ready",
	"unknown-node":        "Unknown node",
	"internal":            "Internal error",
	"body-too-large":      "Request body too large",
	"membership-conflict": "Membership change refused",
	// The API listener's authorization and content-type answers.
	"unauthorized":           "Authentication required",
	"forbidden":              "Not allowed for this token's role",
	"unsupported-media-type": "Unsupported media type",
	// The gateway listener's answers (SPEC's table).
	"missing-key":                 "Idempotency key required",
	"in-progress":                 "Request in progress",
	"key-reuse":                   "Idempotency key reused",
	"replay-unavailable":          "Stored response unavailable",
	"outcome-unknown":             "Outcome unknown",
	"missing-token":               "Form token required",
	"suspected-duplicate":         "Suspected duplicate",
	"upstream-unreachable":        "Upstream unreachable",
	"upstream-timeout":            "Upstream timed out",
	"upstream-response-too-large": "Upstream response too large",
	"too-many-requests":           "Too many requests",
	"ambiguous-path":              "Path or method is an alias of a route",
}

// writeProblem answers with a problem document.
func writeProblem(ctx *fasthttp.RequestCtx, status int, slug, detail string) {
	title := problemTitles[slug]
	if title == "" {
		title = fasthttp.StatusMessage(status)
	}
	body, _ := json.Marshal(Problem{Type: ProblemBase + slug, Title: title, Status: status, Detail: detail})
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/problem+json")
	if status == fasthttp.StatusServiceUnavailable || status == fasthttp.StatusConflict && slug == "in-progress" {
		ctx.Response.Header.Set("Retry-After", "1")
	}
	ctx.SetBody(body)
}

// writeStoreError answers an error from the store: unavailability is 503
// with Retry-After (fail closed); anything else is a 500 whose detail is
// the error.
func writeStoreError(ctx *fasthttp.RequestCtx, err error) {
	if raftstore.Unavailable(err) || errors.Is(err, errCtxTimeout) {
		writeProblem(ctx, fasthttp.StatusServiceUnavailable, "unavailable", err.Error())
		return
	}
	if errors.Is(err, fsm.ErrBadCommand) {
		writeProblem(ctx, fasthttp.StatusBadRequest, "bad-request", err.Error())
		return
	}
	if errors.Is(err, raftstore.ErrTooLarge) {
		writeProblem(ctx, fasthttp.StatusRequestEntityTooLarge, "body-too-large", err.Error())
		return
	}
	writeProblem(ctx, fasthttp.StatusInternalServerError, "internal", err.Error())
}

var errCtxTimeout = errors.New("deadline exceeded")

func writeJSON(ctx *fasthttp.RequestCtx, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeProblem(ctx, fasthttp.StatusInternalServerError, "internal", err.Error())
		return
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(append(body, '\n'))
}

func etag(version uint64) string { return `"` + strconv.FormatUint(version, 10) + `"` }
