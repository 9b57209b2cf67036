package api

// The API's cluster view and membership changes.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/storeapi"
)

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

func (a *API) status(ctx *fasthttp.RequestCtx) {
	st := a.store.Status()
	httpx.WriteJSON(ctx, fasthttp.StatusOK, statusJSON{Node: st.Node, Version: a.cfg.Version, Role: st.Role, Term: st.Term,
		Leader: st.Leader, ClusterID: st.ClusterID, LastIndex: st.LastIndex, CommitIndex: st.CommitIndex,
		AppliedIndex: st.AppliedIndex, Ready: st.NotReady == "", NotReady: st.NotReady})
}

// clusterJSON is GET /v1/cluster. Nodes are one node's view, View's: its
// membership and what its probes found, every member's lag measured
// against its own log at that member's answer. Leader, Removed and the
// two indexes are the node asked's own (what a script waiting for that
// node to catch up reads).
type clusterJSON struct {
	Leader string `json:"leader"`
	// ClusterID is the cluster's id, given by its first leader ("" until
	// then, and on a node that waits to be added and knows no cluster).
	ClusterID string `json:"cluster_id"`
	// View is the node whose view Nodes are: the leader's when it
	// answered, else the node asked.
	View string `json:"view"`
	// Removed: the node asked was removed from the cluster.
	Removed bool `json:"removed"`
	// Nodes are the viewing node's members. Reachable: the member
	// answered the viewing node's last status probe (one a second);
	// LastContactMS is how long ago it last answered (-1: never, State
	// "unknown" until the first probe of a member just added). MatchIndex
	// is the member's last log index as it last answered; Lag how far that
	// was behind the viewing node's last index at that moment.
	Nodes        []storeapi.Server `json:"nodes"`
	CommitIndex  uint64            `json:"commit_index"`
	AppliedIndex uint64            `json:"applied_index"`
	// Version is the build the node asked runs (each node's is in its
	// GET /v1/status): during a rolling upgrade, which node runs what.
	Version string `json:"version"`
}

func (a *API) cluster(ctx *fasthttp.RequestCtx) {
	c, cancel := a.opCtx()
	defer cancel()
	view, err := a.store.Cluster(c)
	if err != nil {
		httpx.WriteError(ctx, err)
		return
	}
	leader, _ := a.store.Leader()
	commit, applied := a.store.Indexes()
	out := clusterJSON{Leader: leader, ClusterID: a.store.ClusterID(), View: view.View, Removed: a.store.Removed(), Nodes: []storeapi.Server{},
		CommitIndex: commit, AppliedIndex: applied, Version: a.cfg.Version}
	for _, s := range view.Servers {
		s.API = a.nodeAPI(s.ID)
		out.Nodes = append(out.Nodes, s)
	}
	httpx.WriteJSON(ctx, fasthttp.StatusOK, out)
}

// nodeAPI is member id's API address: the cluster file's for the nodes it
// lists (a cluster restored from a backup onto new ports must not show the
// old ones), else what POST /v1/cluster/nodes stored.
func (a *API) nodeAPI(id string) string {
	if addr, ok := a.cfg.NodeAPIs[id]; ok {
		return addr
	}
	addr, _ := a.store.NodeAPI(id)
	return addr
}

func (a *API) addNode(ctx *fasthttp.RequestCtx) {
	var req struct {
		ID   string `json:"id"`
		Raft string `json:"raft"`
		API  string `json:"api"`
		// Voter: false adds a non-voter (promote it later); default true.
		Voter *bool `json:"voter"`
	}
	if !decodeJSON(ctx, &req) {
		return
	}
	if !validNodeID(req.ID) {
		httpx.WriteProblem(ctx, httpx.BadRequest, "id: want 1-64 characters without '/', spaces or NUL")
		return
	}
	for field, addr := range map[string]string{"raft": req.Raft, "api": req.API} {
		if _, _, err := net.SplitHostPort(addr); err != nil || addr == "" {
			httpx.WriteProblem(ctx, httpx.BadRequest, fmt.Sprintf("%s: %q is not host:port", field, addr))
			return
		}
	}
	c, cancel := a.opCtx()
	defer cancel()
	if err := a.store.SetNodeAPI(c, req.ID, req.API); err != nil {
		httpx.WriteError(ctx, err)
		return
	}
	add := a.store.AddVoter
	if req.Voter != nil && !*req.Voter {
		add = a.store.AddNonvoter
	}
	if err := add(c, req.ID, req.Raft); err != nil {
		a.membershipError(ctx, req.ID, err)
		return
	}
	a.clusterAfterChange(ctx, c)
}

// membershipError answers a refused membership change.
func (a *API) membershipError(ctx *fasthttp.RequestCtx, id string, err error) {
	switch {
	case errors.Is(err, storeapi.ErrUnknownNode):
		httpx.WriteProblem(ctx, httpx.UnknownNode, fmt.Sprintf("no node %q in the cluster", id))
	case storeapi.Unavailable(err):
		httpx.WriteError(ctx, err)
	default:
		httpx.WriteProblem(ctx, httpx.MembershipConflict, err.Error())
	}
}

// validNodeID: 1-64 characters without '/', spaces or NUL (a path segment,
// and a member of Raft's configuration).
func validNodeID(id string) bool {
	return id != "" && len(id) <= 64 && !strings.ContainsAny(id, "\x00/ ")
}

// nodeID reads the {id} of /v1/cluster/nodes/{id}; "" means it answered 400.
func nodeID(ctx *fasthttp.RequestCtx, raw string) string {
	id, err := url.PathUnescape(raw)
	if err != nil || !validNodeID(id) {
		httpx.WriteProblem(ctx, httpx.BadRequest, "want /v1/cluster/nodes/{id} with an id of 1-64 characters without '/', spaces or NUL")
		return ""
	}
	return id
}

// changeNode makes a change to member {id} that takes ?force=1: promote
// or remove.
func (a *API) changeNode(ctx *fasthttp.RequestCtx, rawID string, change func(context.Context, string, bool) error) {
	id := nodeID(ctx, rawID)
	if id == "" {
		return
	}
	force, ok := flagParam(ctx, "force")
	if !ok {
		return
	}
	c, cancel := a.opCtx()
	defer cancel()
	if err := change(c, id, force); err != nil {
		a.membershipError(ctx, id, err)
		return
	}
	a.clusterAfterChange(ctx, c)
}

// clusterAfterChange answers with the membership once this node has applied
// the change it just made (it may have been forwarded to the leader).
func (a *API) clusterAfterChange(ctx *fasthttp.RequestCtx, c context.Context) {
	// A node that removed itself has no leader to wait for: it answers
	// with its own view, which says it was removed.
	if err := a.store.Barrier(c); err != nil && !a.store.Removed() {
		httpx.WriteError(ctx, err)
		return
	}
	a.cluster(ctx)
}
