package api

// GET /v1/records/export: every idempotency record begun in a time window,
// streamed as NDJSON, for a reconciliation with a payment provider's
// statement (idemgate reconcile).

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/tokens"
)

const exportPath = "/v1/records/export"

// exportChunk is how many records one read transaction of the export
// visits: its lines are what the export holds in memory at once, and the
// transaction ends before they are written, so a slow reader holds none.
const exportChunk = 256

// maxReconcileID bounds a reconcile id: an id is short; a pointer at a
// large member names no id.
const maxReconcileID = 256

// ExportLine is one record of the export, one JSON object per line. The
// last line is an ExportEnd instead.
type ExportLine struct {
	Scope       string `json:"scope"`
	Tenant      string `json:"tenant"`
	Key         string `json:"key"`
	State       string `json:"state"`
	StatusCode  int    `json:"status_code,omitempty"`
	Fingerprint string `json:"fingerprint"`
	CreatedAt   string `json:"created_at"`
	CompletedAt string `json:"completed_at,omitempty"`
	// ReconcileID is the member the route's reconcile_id names, read from
	// the stored response; absent when the route names none, or the body
	// was not stored, is not JSON, or has no string or number there.
	ReconcileID string `json:"reconcile_id,omitempty"`
}

// ExportEnd is the export's last line: End says it is complete (Records
// lines before it); an export that stopped on an error ends with Error
// instead, and one cut off ends with neither, so a reader knows either way.
type ExportEnd struct {
	End     bool   `json:"end"`
	Records int64  `json:"records"`
	Error   string `json:"error,omitempty"`
}

// exportQuery is a validated export request.
type exportQuery struct {
	since, until int64  // unix nanoseconds; since <= created < until
	prefix       []byte // of the record keys: scope and tenant, as given
	local        bool
}

func parseExportQuery(ctx *fasthttp.RequestCtx) (exportQuery, bool) {
	args := ctx.QueryArgs()
	var q exportQuery
	var times [2]time.Time
	for i, name := range []string{"since", "until"} {
		raw := string(args.Peek(name))
		t, err := time.Parse(time.RFC3339Nano, raw)
		if err != nil {
			httpx.WriteProblem(ctx, httpx.BadRequest, fmt.Sprintf("%s: %q: want an RFC 3339 time such as 2026-01-02T00:00:00Z", name, raw))
			return q, false
		}
		times[i] = t
	}
	if !times[0].Before(times[1]) {
		httpx.WriteProblem(ctx, httpx.BadRequest, "since must be before until")
		return q, false
	}
	q.since, q.until = times[0].UnixNano(), times[1].UnixNano()
	scope := string(args.Peek("scope"))
	if args.Has("scope") {
		if err := tokens.CheckScope(scope); err != nil {
			httpx.WriteProblem(ctx, httpx.InvalidScope, "scope: "+err.Error())
			return q, false
		}
		q.prefix = append(append(q.prefix, scope...), 0)
	}
	if args.Has("tenant") {
		tenant := args.Peek("tenant")
		switch {
		case scope == "":
			httpx.WriteProblem(ctx, httpx.BadRequest, "tenant needs scope: a tenant is one route's")
			return q, false
		case bytes.IndexByte(tenant, 0) >= 0:
			httpx.WriteProblem(ctx, httpx.InvalidKey, "tenant must not contain NUL")
			return q, false
		}
		q.prefix = append(append(q.prefix, tenant...), 0)
	}
	switch c := string(args.Peek("consistency")); c {
	case "":
	case "local":
		q.local = true
	default:
		httpx.WriteProblem(ctx, httpx.BadRequest, fmt.Sprintf("consistency: %q: want local, or no consistency for a linearizable export", c))
		return q, false
	}
	return q, true
}

// exportRecords answers the export: validated, then (unless
// consistency=local) a barrier so that every record acknowledged before
// the request is in it, then streamed a chunk at a time.
func (h *dataHandlers) exportRecords(ctx *fasthttp.RequestCtx) {
	q, ok := parseExportQuery(ctx)
	if !ok {
		return
	}
	if !q.local {
		c, cancel := h.opCtx()
		err := h.store.Barrier(c)
		cancel()
		if err != nil {
			httpx.WriteError(ctx, err)
			return
		}
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/x-ndjson")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	if ctx.IsHead() {
		return
	}
	h.logger.Info("records export", "since", httpx.RFC3339(nsTime(q.since)), "until", httpx.RFC3339(nsTime(q.until)),
		"prefix", strings.ReplaceAll(string(q.prefix), "\x00", "/"), "remote", ctx.RemoteIP().String())
	conn, timeout := ctx.Conn(), h.cfg.WriteTimeout
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) { h.writeExport(w, q, conn, timeout) })
}

// writeExport writes the export's lines: each chunk is read in one short
// transaction into buf, then written and flushed, renewing the write
// deadline (the listener's WriteTimeout bounds a stall, not the whole
// export). A reader gone away ends it at the next flush.
func (h *dataHandlers) writeExport(w *bufio.Writer, q exportQuery, conn net.Conn, timeout time.Duration) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var n int64
	var from []byte
	for {
		buf.Reset()
		next, err := h.store.ScanRecords(q.prefix, from, exportChunk, func(k []byte, r *command.Record) error {
			if r.CreatedAt < q.since || r.CreatedAt >= q.until {
				return nil
			}
			n++
			return enc.Encode(h.exportLine(k, r))
		})
		if err == nil && next == nil {
			err = enc.Encode(ExportEnd{End: true, Records: n})
		} else if err != nil {
			h.logger.Error("records export failed", "err", err)
			enc.Encode(ExportEnd{Records: n, Error: err.Error()})
		}
		if timeout > 0 && conn != nil {
			conn.SetWriteDeadline(time.Now().Add(timeout))
		}
		if _, werr := w.Write(buf.Bytes()); werr != nil || w.Flush() != nil || err != nil || next == nil {
			return
		}
		from = next
	}
}

// exportLine is the record under record key k as the export shows it.
func (h *dataHandlers) exportLine(k []byte, r *command.Record) ExportLine {
	scope, rest, _ := bytes.Cut(k, []byte{0})
	tenant, key, _ := bytes.Cut(rest, []byte{0})
	l := ExportLine{Scope: string(scope), Tenant: string(tenant), Key: string(key), State: r.State.String(),
		Fingerprint: hex.EncodeToString(r.Fingerprint), CreatedAt: httpx.RFC3339(nsTime(r.CreatedAt))}
	if r.State == command.StateCompleted {
		l.StatusCode, l.CompletedAt = r.Status, httpx.RFC3339(nsTime(r.UpdatedAt))
		if !r.BodyDropped {
			for _, ptr := range h.reconcile[l.Scope] {
				if id, ok := reconcileID(r.Body, ptr); ok {
					l.ReconcileID = id
					break
				}
			}
		}
	}
	return l
}

// reconcilePointers compiles the routes' reconcile_id options (scope ->
// json:/pointer, as validated by config): scope -> pointers, each tried in
// turn (routes may share a scope).
func reconcilePointers(ids map[string][]string) map[string][][]string {
	out := map[string][][]string{}
	for scope, list := range ids {
		for _, id := range list {
			ptr, err := config.ParsePointer(strings.TrimPrefix(id, "json:"))
			if err == nil && ptr != nil {
				out[scope] = append(out[scope], ptr)
			}
		}
	}
	return out
}

// reconcileID reads the member ptr points at in a JSON body: a string as
// it is, a number as written; anything else, or no JSON at all, is none.
func reconcileID(body []byte, ptr []string) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	var ok bool
	if dec.Decode(&v) != nil {
		return "", false
	}
	for _, tok := range ptr {
		switch x := v.(type) {
		case map[string]any:
			if v, ok = x[tok]; !ok {
				return "", false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) || (len(tok) > 1 && tok[0] == '0') {
				return "", false
			}
			v = x[i]
		default:
			return "", false
		}
	}
	var id string
	switch x := v.(type) {
	case string:
		id = x
	case json.Number:
		id = x.String()
	}
	if id == "" || len(id) > maxReconcileID {
		return "", false
	}
	return id, true
}

// exportRoutes are the records export's.
func (h *dataHandlers) exportRoutes() []resource {
	return []resource{{path: exportPath, ops: []op{{method: "GET", id: "recordsExport", role: admin, handle: plain(h.exportRecords), doc: opDoc{
		summary:     "Export the records of a time window",
		description: "Every idempotency record begun (created) in [since, until), of one scope (route) and tenant if given, as NDJSON: one JSON object per line (schema ExportLine), in key order, streamed in bounded memory however many there are. The last line is {\"end\":true,\"records\":N}; an export that failed part way ends with {\"end\":false,\"error\":...} instead, and one cut off ends with neither. Taken after a linearizable barrier (every record acknowledged before the request is in it) unless consistency=local. For `idemgate reconcile`. Admin role: it lists every tenant's keys in bulk and reads a member out of each stored response.",
		params:      []string{`{"name": "since", "in": "query", "required": true, "description": "RFC 3339 time: the first creation time included.", "schema": {"type": "string", "format": "date-time"}}`, `{"name": "until", "in": "query", "required": true, "description": "RFC 3339 time, after since: the first creation time left out.", "schema": {"type": "string", "format": "date-time"}}`, `{"name": "scope", "in": "query", "description": "Only this route's records.", "schema": {"$ref": "#/components/schemas/Scope"}}`, `{"name": "tenant", "in": "query", "description": "With scope: only this tenant's records (\"\" is the records of no tenant).", "schema": {"type": "string"}}`, "Consistency"},
		answers: map[int]string{
			200: `{"description": "The records, one JSON object per line (x-idemgate-item-schema: each line is an ExportLine, what OpenAPI 3.2 calls itemSchema), then the end line.", "content": {"application/x-ndjson": {"x-idemgate-item-schema": {"$ref": "#/components/schemas/ExportLine"}, "example": "{\"scope\":\"pay\",\"tenant\":\"\",\"key\":\"k1\",\"state\":\"completed\",\"status_code\":201,\"fingerprint\":\"9f86d0\",\"created_at\":\"2026-01-02T10:00:00Z\",\"completed_at\":\"2026-01-02T10:00:01Z\",\"reconcile_id\":\"ch_1\"}\n{\"end\":true,\"records\":1}\n"}}}`,
			400: "Problem400BadRequestInvalidKeyInvalidScope",
		},
	}}}}}
}
