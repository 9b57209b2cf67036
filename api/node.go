package api

// This node itself: its health, readiness, status and metrics.

import (
	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
)

func (h *nodeHandlers) healthz(ctx *fasthttp.RequestCtx) {
	if !h.store.Alive() {
		httpx.WriteProblem(ctx, httpx.NotAlive, "this node's Raft or state machine has stopped (see its log); restart it")
		return
	}
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.SetBodyString("ok\n")
}

func (h *nodeHandlers) readyz(ctx *fasthttp.RequestCtx) {
	if why := h.store.NotReady(); why != "" {
		httpx.WriteProblem(ctx, httpx.NotReady, why)
		return
	}
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.SetBodyString("ready\n")
}

// serveMetrics serves the node's Prometheus registry.
func (h *nodeHandlers) serveMetrics(ctx *fasthttp.RequestCtx) { h.metrics(ctx) }

// statusJSON is GET /v1/status: the node asked, as it sees itself.
type statusJSON struct {
	Node         string `json:"node"`
	Version      string `json:"version"`
	Role         string `json:"role"`
	Term         uint64 `json:"term"`
	Leader       string `json:"leader"`
	ClusterID    string `json:"cluster_id"`
	LastIndex    uint64 `json:"last_index"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	Ready        bool   `json:"ready"`
	NotReady     string `json:"not_ready,omitempty"`
}

func (h *nodeHandlers) status(ctx *fasthttp.RequestCtx) {
	st := h.store.Status()
	httpx.WriteJSON(ctx, fasthttp.StatusOK, statusJSON{Node: st.Node, Version: h.cfg.Version, Role: st.Role, Term: st.Term,
		Leader: st.Leader, ClusterID: st.ClusterID, LastIndex: st.LastIndex, CommitIndex: st.CommitIndex,
		AppliedIndex: st.AppliedIndex, Ready: st.NotReady == "", NotReady: st.NotReady})
}

// routes are this node's own: health, readiness, metrics and status.
func (h *nodeHandlers) routes() []resource {
	return []resource{
		{path: "/healthz", ops: []op{{method: "GET", id: "healthz", role: read, handle: plain(h.healthz), doc: opDoc{
			local:       true,
			summary:     "Is the process alive",
			description: "200 while this node's Raft and state machine run; 503 not-alive once they stopped (restart the node). Open (no token) unless api.open leaves it out.",
			answers: map[int]string{
				200: `{"description": "Alive.", "content": {"text/plain": {"schema": {"const": "ok\n"}}}}`,
				400: "Problem400BadRequest",
				503: "Problem503NotAliveUnavailable",
			},
		}}}},
		{path: "/readyz", ops: []op{{method: "GET", id: "readyz", role: read, handle: plain(h.readyz), doc: opDoc{
			local:       true,
			summary:     "Can this node serve writes",
			description: "200 once the node knows a leader and has applied up to the commit index it learned; 503 not-ready otherwise (no leader, disk guard, removed, behind, Raft shut down), the detail saying why. Open (no token) unless api.open leaves it out.",
			answers: map[int]string{
				200: `{"description": "Ready.", "content": {"text/plain": {"schema": {"const": "ready\n"}}}}`,
				400: "Problem400BadRequest",
				503: "Problem503NotReadyUnavailable",
			},
		}}}},
		{path: "/metrics", ops: []op{{method: "GET", id: "metrics", role: read, handle: plain(h.serveMetrics), doc: opDoc{
			local:       true,
			summary:     "Prometheus metrics",
			description: "The node's metrics in the Prometheus text format (OpenMetrics when the scraper asks for it). Open (no token) unless api.open leaves it out.",
			answers: map[int]string{
				200: `{"description": "The metrics.", "content": {"text/plain": {"schema": {"type": "string"}}, "application/openmetrics-text": {"schema": {"type": "string"}}}}`,
				400: "Problem400BadRequest",
				503: "Problem503Unavailable",
			},
		}}}},
		{path: "/v1/status", ops: []op{{method: "GET", id: "status", role: read, handle: plain(h.status), doc: opDoc{
			local:       true,
			summary:     "This node as it sees itself",
			description: "Role, term, indexes, readiness and build version of the node asked.",
			answers: map[int]string{
				200: jsonAnswer("The node's status.", "Status"),
				400: "Problem400BadRequest",
				503: "Problem503Unavailable",
			},
		}}}},
	}
}
