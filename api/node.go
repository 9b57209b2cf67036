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
