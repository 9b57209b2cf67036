package api

// GET /v1/snapshot: a backup of the node's state, streamed; POST: take a
// Raft snapshot on this node now.

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/storeapi"
)

// Headers of a snapshot answer: the applied index and term of the state it
// holds, so a client knows what it got before reading the body.
const (
	headerSnapshotIndex = "Idemgate-Snapshot-Index"
	headerSnapshotTerm  = "Idemgate-Snapshot-Term"
)

// snapshot answers a backup file (backup/backup.go describes it): taken
// after a linearizable barrier, so every write acknowledged before the
// request is in it.
func (h *nodeHandlers) snapshot(ctx *fasthttp.RequestCtx) {
	c, cancel := h.opCtx()
	defer cancel()
	b, err := h.store.Backup(c)
	if err != nil {
		httpx.WriteError(ctx, err)
		return
	}
	h.logger.Info("snapshot: sending a backup", "index", b.Index, "term", b.Term, "bytes", b.Size, "remote", ctx.RemoteIP().String())
	idx := strconv.FormatUint(b.Index, 10)
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/octet-stream")
	ctx.Response.Header.Set(headerSnapshotIndex, idx)
	ctx.Response.Header.Set(headerSnapshotTerm, strconv.FormatUint(b.Term, 10))
	ctx.Response.Header.Set("Content-Disposition", `attachment; filename="idemgate-`+idx+`.snap"`)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	// fasthttp closes the stream (the spooled file) once it is sent, or
	// when the connection fails.
	ctx.SetBodyStream(&stallGuard{Backup: b, conn: ctx.Conn(), timeout: h.cfg.WriteTimeout}, int(b.Size))
}

// stallGuard renews the connection's write deadline at every read of the
// body: the listener's WriteTimeout bounds a response whole, which a large
// backup on a slow link would outlast; here it bounds a stall instead.
type stallGuard struct {
	*storeapi.Backup
	conn    net.Conn // the request's connection; used only while its response is written
	timeout time.Duration
}

func (g *stallGuard) Read(p []byte) (int, error) {
	if g.timeout > 0 {
		g.conn.SetWriteDeadline(time.Now().Add(g.timeout))
	}
	return g.Backup.Read(p)
}

// snapshotJSON is the answer to POST /v1/snapshot.
type snapshotJSON struct {
	Index   uint64  `json:"index"`   // the last log index the snapshot covers (0: nothing applied yet)
	Term    uint64  `json:"term"`    // that entry's term
	Bytes   int64   `json:"bytes"`   // its size
	Seconds float64 `json:"seconds"` // how long taking it lasted
	New     bool    `json:"new"`     // false: nothing was applied since the newest snapshot, which is described
}

// takeSnapshot makes this node take a Raft snapshot now and compact its log.
func (h *nodeHandlers) takeSnapshot(ctx *fasthttp.RequestCtx) {
	c, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	info, err := h.store.TakeSnapshot(c)
	if err != nil {
		httpx.WriteError(ctx, err)
		return
	}
	if info.New {
		h.logger.Info("snapshot: taken on request", "index", info.Index, "bytes", info.Bytes, "took", info.Took.String(), "remote", ctx.RemoteIP().String())
	}
	httpx.WriteJSON(ctx, fasthttp.StatusOK, snapshotJSON{Index: info.Index, Term: info.Term, Bytes: info.Bytes, Seconds: info.Took.Seconds(), New: info.New})
}

// snapshotTimeout bounds a snapshot taken on request: ten million keys take
// tens of seconds to write.
const snapshotTimeout = 10 * time.Minute

// snapshotRoutes are the backup's and the Raft snapshot's.
func (h *nodeHandlers) snapshotRoutes() []resource {
	return []resource{{path: "/v1/snapshot", ops: []op{
		{method: "GET", id: "backup", role: admin, handle: plain(h.snapshot), doc: opDoc{
			summary:     "Stream a backup",
			description: "A backup file of the node's state, taken after a linearizable barrier (every write acknowledged before the request is in it), for `idemgate snapshot restore`.",
			answers: map[int]string{
				200: `{"description": "The backup file.", "headers": {"Idemgate-Snapshot-Index": {"$ref": "#/components/headers/SnapshotIndex"}, "Idemgate-Snapshot-Term": {"$ref": "#/components/headers/SnapshotTerm"}, "Content-Disposition": {"$ref": "#/components/headers/ContentDisposition"}}, "content": {"application/octet-stream": {}}}`,
				400: "Problem400BadRequestInvalidKey",
			},
		}},
		{method: "POST", id: "takeSnapshot", role: admin, handle: plain(h.takeSnapshot), doc: opDoc{
			summary:     "Take a Raft snapshot now",
			description: "This node takes a Raft snapshot and compacts its log.",
			answers: map[int]string{
				200: jsonAnswer("The snapshot taken (or the newest, when nothing was applied since).", "SnapshotInfo"),
				400: "Problem400BadRequestInvalidKey",
			},
		}},
	}}}
}
