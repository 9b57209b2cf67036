package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/httpx"
)

// The guarded counter: POST /v1/kv/{key} {"by":-100,"min":0} adds by to
// the key's integer value, refused when the result would leave [min, max]
// (the design article's UPDATE ... SET balance = balance - 100 WHERE
// balance >= 100). The bound is checked in the increment's own apply, so
// two concurrent withdrawals never take a balance below min. The path is
// the key's own, not /v1/kv/{key}/incr: a key may hold a slash, so that
// path would also name the key "{key}/incr".

// incrRequest is an increment's body; by defaults to 1.
type incrRequest struct {
	By  *int64 `json:"by"`
	Min *int64 `json:"min"`
	Max *int64 `json:"max"`
}

// incrAnswer is an increment's answer.
type incrAnswer struct {
	Value   int64  `json:"value"`
	Version uint64 `json:"version"`
}

func (h *dataHandlers) kvIncr(ctx *fasthttp.RequestCtx, key string) {
	var req incrRequest
	dec := json.NewDecoder(bytes.NewReader(ctx.PostBody()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		httpx.WriteProblem(ctx, httpx.InvalidJSON, fmt.Sprintf(`want {"by": integer, "min": integer, "max": integer} (each optional; by is 1 without it): %v`, err))
		return
	}
	if dec.More() {
		httpx.WriteProblem(ctx, httpx.InvalidJSON, "one JSON object, nothing after it")
		return
	}
	by := int64(1)
	if req.By != nil {
		by = *req.By
	}
	if req.Min != nil && req.Max != nil && *req.Min > *req.Max {
		httpx.WriteProblem(ctx, httpx.BadRequest, fmt.Sprintf("min %d is above max %d", *req.Min, *req.Max))
		return
	}
	res, ok := h.applyKV(ctx, command.KVIncrBoundedCommand([]byte(key), by, req.Min, req.Max))
	if !ok {
		return
	}
	switch res.Code {
	case command.CodeOK, command.CodeCreated:
		n, _ := strconv.ParseInt(string(res.Value), 10, 64)
		ctx.Response.Header.Set("ETag", etag(res.Version))
		httpx.WriteJSON(ctx, fasthttp.StatusOK, incrAnswer{Value: n, Version: res.Version})
	case command.CodeOutOfRange:
		httpx.WriteProblem(ctx, httpx.OutOfRange, fmt.Sprintf("the value is %s: adding %d would leave %s; nothing was changed", res.Value, by, bounds(req.Min, req.Max)))
	case command.CodeOverflow:
		httpx.WriteProblem(ctx, httpx.OutOfRange, fmt.Sprintf("adding %d would overflow a 64-bit integer; nothing was changed", by))
	case command.CodeNotInteger:
		httpx.WriteProblem(ctx, httpx.NotInteger, "the key's value is not a decimal 64-bit integer; nothing was changed")
	default:
		httpx.WriteError(ctx, res.Err())
	}
}

// bounds names [min, max] for an answer.
func bounds(lo, hi *int64) string {
	s := func(p *int64, none string) string {
		if p == nil {
			return none
		}
		return strconv.FormatInt(*p, 10)
	}
	return "[" + s(lo, "-inf") + ", " + s(hi, "+inf") + "]"
}
