package api

// The API's KV keyspace: SETNX, compare-and-set, GET, GETDEL.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/storeapi"
)

// checkKVKey validates a KV key: 1-255 bytes, no control bytes.
func checkKVKey(key string) error {
	if len(key) == 0 || len(key) > httpx.MaxClientKeyLen {
		return fmt.Errorf("key must be 1-%d bytes, got %d", httpx.MaxClientKeyLen, len(key))
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] == 0x7f {
			return fmt.Errorf("key must not contain control characters (byte %d is 0x%02x)", i, key[i])
		}
	}
	return nil
}

// kvPath reads /v1/kv/{key}: the key is the rest of the path,
// percent-decoded (a slash is part of it).
func kvPath(ctx *fasthttp.RequestCtx, p []string) bool {
	key, err := url.PathUnescape(p[0])
	if err == nil {
		err = checkKVKey(key)
	}
	if err != nil {
		httpx.WriteProblem(ctx, httpx.InvalidKey, err.Error())
		return false
	}
	p[0] = key
	return true
}

// applyKV proposes a KV command built from a checked request (propose).
func (h *dataHandlers) applyKV(ctx *fasthttp.RequestCtx, cmd *command.Command) (*command.Result, bool) {
	return propose(h.base, ctx, func(c context.Context) (*command.Result, error) { return h.store.ApplyKV(c, cmd) }, nil)
}

func writeValue(ctx *fasthttp.RequestCtx, status int, value []byte, version uint64, expiresAt int64) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/octet-stream")
	ctx.Response.Header.Set("ETag", etag(version))
	if expiresAt != 0 {
		ctx.Response.Header.Set("Expires-At", httpx.RFC3339(nsTime(expiresAt)))
	}
	ctx.SetBody(value)
}

func (h *dataHandlers) kvGet(ctx *fasthttp.RequestCtx, key string) {
	c, cancel := h.opCtx()
	defer cancel()
	local := string(ctx.QueryArgs().Peek("consistency")) == "local"
	// The store reads a key of any keyspace (the Redis face's SELECT); the
	// API's are keyspace 0's, stored as named.
	var e command.KVEntry
	err := storeapi.CheckKVKey([]byte(key))
	if err == nil {
		e, err = h.store.KV(c, []byte(key), local)
	}
	switch {
	case errors.Is(err, command.ErrNotFound):
		httpx.WriteProblem(ctx, httpx.NotFound, "no such key")
	case err != nil:
		httpx.WriteError(ctx, err)
	case e.Kind != command.KindString:
		httpx.WriteProblem(ctx, httpx.WrongType, msgWrongType)
	default:
		writeValue(ctx, fasthttp.StatusOK, e.Value, e.Version, e.ExpiresAt)
	}
}

// msgWrongType is the detail for a key that holds a list.
const msgWrongType = "the key holds a list (written with the Redis protocol's LPUSH or RPUSH); /v1/kv reads and edits strings"

func (h *dataHandlers) kvPut(ctx *fasthttp.RequestCtx, key string) {
	args := ctx.QueryArgs()
	ttl, ok := httpx.ParseTTL(ctx, "ttl", string(args.Peek("ttl")))
	if !ok {
		return
	}
	mode, version := command.SetPlain, uint64(0)
	nx, ok := flagParam(ctx, "nx")
	if !ok {
		return
	}
	if nx {
		mode = command.SetNX
	}
	switch inm := ctx.Request.Header.Peek("If-None-Match"); {
	case string(inm) == "*":
		mode = command.SetNX
	case len(inm) > 0:
		// A version here would mean "unless the key is at it", which no
		// command does: ignoring it would overwrite what the caller meant
		// to keep.
		httpx.WriteProblem(ctx, httpx.BadRequest, fmt.Sprintf("If-None-Match: %.64q: only * (set when absent) is supported", inm))
		return
	}
	if v, ok := ifMatch(ctx); !ok {
		return
	} else if v != 0 {
		if mode == command.SetNX {
			httpx.WriteProblem(ctx, httpx.BadRequest, "If-Match cannot be combined with nx")
			return
		}
		mode, version = command.SetCAS, v
	}
	// If-Value: the state-transition guard, set only while the key holds
	// that value (Redis 8.4's SET ... IFEQ, one state machine rule).
	match := ctx.Request.Header.Peek("If-Value")
	if match != nil {
		if mode != command.SetPlain {
			httpx.WriteProblem(ctx, httpx.BadRequest, "If-Value cannot be combined with nx, If-None-Match or If-Match")
			return
		}
		mode, match = command.SetIfEq, append([]byte(nil), match...)
	}
	value := append([]byte(nil), ctx.PostBody()...)
	res, ok := h.applyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(key), Value: value, TTL: ttl,
		Mode: mode, Version: version, Match: match}))
	if !ok {
		return
	}
	switch res.Code {
	case command.CodeCreated:
		status := fasthttp.StatusOK
		if mode == command.SetNX {
			status = fasthttp.StatusCreated
		}
		writeValue(ctx, status, nil, res.Version, res.ExpiresAt)
	case command.CodeOK:
		writeValue(ctx, fasthttp.StatusOK, nil, res.Version, res.ExpiresAt)
	case command.CodeExists:
		writeValue(ctx, fasthttp.StatusConflict, res.Value, res.Version, res.ExpiresAt) // a list's is none (fsm)
	case command.CodeVersionMismatch:
		if mode == command.SetIfEq {
			valueMismatch(ctx, res.Version)
			return
		}
		versionMismatch(ctx, version, res.Version)
	default:
		httpx.WriteError(ctx, res.Err())
	}
}

// valueMismatch answers a set whose If-Value was not the key's value.
func valueMismatch(ctx *fasthttp.RequestCtx, current uint64) {
	if current == 0 {
		httpx.WriteProblem(ctx, httpx.ValueMismatch, "the key does not exist: If-Value never creates it")
		return
	}
	httpx.WriteProblem(ctx, httpx.ValueMismatch, "the key's value is not If-Value: nothing was changed")
	ctx.Response.Header.Set("ETag", etag(current))
}

// ifMatch reads If-Match: "<version>" (0 when absent); false means it
// answered 400.
func ifMatch(ctx *fasthttp.RequestCtx) (uint64, bool) {
	im := ctx.Request.Header.Peek("If-Match")
	if len(im) == 0 {
		return 0, true
	}
	v, err := strconv.ParseUint(strings.Trim(strings.TrimPrefix(string(im), "W/"), `"`), 10, 64)
	if err != nil || v == 0 {
		httpx.WriteProblem(ctx, httpx.InvalidVersion, fmt.Sprintf("If-Match: %q is not a version such as \"12\"", im))
		return 0, false
	}
	return v, true
}

// versionMismatch answers 412 with the key's current version as ETag.
func versionMismatch(ctx *fasthttp.RequestCtx, want, current uint64) {
	httpx.WriteProblem(ctx, httpx.VersionMismatch,
		fmt.Sprintf("If-Match %s does not match the key's current version", etag(want)))
	if current != 0 {
		ctx.Response.Header.Set("ETag", etag(current))
	}
}

// kvDelete is GETDEL; with If-Match, compare-and-delete: 412 unless the key
// is at that version (a lock released only by the holder of its token).
func (h *dataHandlers) kvDelete(ctx *fasthttp.RequestCtx, key string) {
	version, ok := ifMatch(ctx)
	if !ok {
		return
	}
	res, ok := h.applyKV(ctx, command.KVGetDelCommand([]byte(key), version))
	if !ok {
		return
	}
	switch res.Code {
	case command.CodeOK:
		writeValue(ctx, fasthttp.StatusOK, res.Value, res.Version, 0)
	case command.CodeNotFound:
		httpx.WriteProblem(ctx, httpx.NotFound, "no such key")
	case command.CodeVersionMismatch:
		versionMismatch(ctx, version, res.Version)
	default:
		httpx.WriteError(ctx, res.Err())
	}
}

func etag(version uint64) string { return `"` + strconv.FormatUint(version, 10) + `"` }

// kvRoutes are the KV keyspace's: a key's path, GET, PUT, POST (kv_incr.go)
// and DELETE.
func (h *dataHandlers) kvRoutes() []resource {
	return []resource{{path: "/v1/kv/{key...}", check: kvPath, params: []string{"KVKey"}, ops: []op{
		{method: "GET", id: "kvGet", role: read, handle: with1(h.kvGet), doc: opDoc{
			summary:     "Read a key",
			description: "The value as the raw body, its version as ETag. Linearizable unless consistency=local.",
			params:      []string{"Consistency"},
			answers: map[int]string{
				200: valueAnswer("The value."),
				400: "Problem400BadRequestInvalidKey",
				404: "Problem404NotFound",
				409: "Problem409WrongType",
			},
		}},
		{method: "PUT", id: "kvPut", role: app, handle: with1(h.kvPut), stores: []command.Type{command.TypeKVSet}, doc: opDoc{
			summary:     "Set a key",
			description: "Plain set (200), SETNX with nx=1 or If-None-Match: * (201 when created; 409 with the current value and its version when the key exists), or compare-and-set with If-Match (200, or 412 when the version moved). The body is the value, stored as sent. With If-Value, only while the key holds that value (200, or 412 value-mismatch): the state-transition guard.",
			params:      []string{"NX", "TTL", "IfMatch", "IfValue", "IfNoneMatch", "IdempotencyKey"},
			body:        `{"description": "The value, any bytes (up to limits.max_request_body).", "content": {"*/*": {}}}`,
			answers: map[int]string{
				200: valueAnswer("Set (no body)."),
				201: valueAnswer("Created (no body)."),
				400: "Problem400BadRequestInvalidKeyInvalidTtlInvalidVersion",
				409: valueAnswer("nx: the key exists; the body is its current value, ETag its version."),
				412: "Problem412ValueMismatchVersionMismatch",
			},
		}},
		{method: "POST", id: "kvIncr", role: app, handle: with1(h.kvIncr), note: "an increment", stores: []command.Type{command.TypeKVIncr}, doc: opDoc{
			summary:     "Add to a key, within bounds",
			description: "A guarded counter: adds by (default 1) to the key's decimal integer value (an absent key counts from 0), refused with 409 out-of-range, nothing changed, when the result would leave [min, max]. The bound is checked in the write itself, so concurrent increments never pass it.",
			params:      []string{"IdempotencyKey"},
			body:        jsonRequest("by, min and max, each optional.", "IncrRequest"),
			answers: map[int]string{
				200: `{"description": "The value after the increment.", "headers": {"ETag": {"$ref": "#/components/headers/ETag"}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/IncrAnswer"}}}}`,
				400: "Problem400BadRequestInvalidJsonInvalidKey",
				409: "Problem409NotIntegerOutOfRange",
			},
		}},
		{method: "DELETE", id: "kvDelete", role: app, handle: with1(h.kvDelete), stores: []command.Type{command.TypeKVGetDel}, doc: opDoc{
			summary:     "Delete a key (GETDEL)",
			description: "200 with the value it removed; 404 when there was none. With If-Match, compare-and-delete: 412 while the key is at another version.",
			params:      []string{"IfMatch", "IdempotencyKey"},
			answers: map[int]string{
				200: valueAnswer("Deleted; the body is the value removed."),
				400: "Problem400BadRequestInvalidKeyInvalidVersion",
				404: "Problem404NotFound",
				409: "Problem409WrongType",
				412: "Problem412VersionMismatch",
			},
		}},
	}}}
}

// valueAnswer is a response object of a key's value (or none): the body
// as stored, the version as ETag, the expiry as Expires-At.
func valueAnswer(desc string) string {
	type ref struct {
		Ref string `json:"$ref"`
	}
	return mustJSON(struct {
		Description string         `json:"description"`
		Headers     map[string]ref `json:"headers"`
		Content     map[string]any `json:"content"`
	}{desc, map[string]ref{"ETag": {"#/components/headers/ETag"}, "Expires-At": {"#/components/headers/ExpiresAt"}},
		map[string]any{"application/octet-stream": struct{}{}}})
}
