package gateway

import (
	"encoding/json"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
)

// Idempotency-Status names, on every answer about a key's record, the state
// that answer leaves the record in (Kong's X-Idempotency-Status, spelled as
// the IETF draft's headers are): a client or a log reads it without
// parsing the body.
const statusHeader = "Idempotency-Status"

// The values of Idempotency-Status.
const (
	statusCreated           = "created"            // this request ran; its answer is stored
	statusReplayed          = "replayed"           // the stored answer of an earlier request
	statusInProgress        = "in-progress"        // an earlier request holds the key; retry
	statusReleased          = "released"           // this request's answer was not stored; the key is free
	statusOutcomeUnknown    = "outcome-unknown"    // the key's request may or may not have run
	statusKeyReuse          = "key-reuse"          // the key belongs to another request
	statusReplayUnavailable = "replay-unavailable" // ran once; its answer cannot be replayed
)

// keyStatus is the Idempotency-Status of a problem answered about a record.
var keyStatus = map[httpx.Kind]string{
	httpx.InProgress:        statusInProgress,
	httpx.KeyReuse:          statusKeyReuse,
	httpx.OutcomeUnknown:    statusOutcomeUnknown,
	httpx.ReplayUnavailable: statusReplayUnavailable,
}

// retryable are the problems a client may retry with the same key and
// body, as idempot-js marks them: the key's request has not run to an end
// this answer reports.
var retryable = map[httpx.Kind]bool{
	httpx.InProgress:          true,
	httpx.Unavailable:         true,
	httpx.UpstreamUnreachable: true,
	httpx.UpstreamTimeout:     true,
	httpx.TooManyRequests:     true,
}

// keyProblem is the problem document of an answer about a key's record: the
// request it answers (instance, its path), whether a retry with the same
// key may succeed, and the key.
type keyProblem struct {
	httpx.Problem
	Instance  string `json:"instance"`
	Retryable bool   `json:"retryable"`
	Key       string `json:"key"`
}

// writeKeyProblem answers with a problem document of kind k about key's
// record, with its Idempotency-Status.
func writeKeyProblem(ctx *fasthttp.RequestCtx, k httpx.Kind, detail string, key []byte) {
	httpx.WriteProblem(ctx, k, detail) // status, Retry-After, content type
	body, _ := json.Marshal(keyProblem{
		Problem:  httpx.Problem{Type: httpx.ProblemBase + k.Slug, Title: k.Title, Status: k.Status, Detail: detail},
		Instance: string(ctx.Path()), Retryable: retryable[k], Key: string(key),
	})
	ctx.SetBody(body)
	if s := keyStatus[k]; s != "" {
		ctx.Response.Header.Set(statusHeader, s)
	}
}
