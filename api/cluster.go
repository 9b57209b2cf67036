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

func (h *clusterHandlers) cluster(ctx *fasthttp.RequestCtx) {
	c, cancel := h.opCtx()
	defer cancel()
	view, err := h.store.Cluster(c)
	if err != nil {
		httpx.WriteError(ctx, err)
		return
	}
	leader, _ := h.store.Leader()
	commit, applied := h.store.Indexes()
	out := clusterJSON{Leader: leader, ClusterID: h.store.ClusterID(), View: view.View, Removed: h.store.Removed(), Nodes: []storeapi.Server{},
		CommitIndex: commit, AppliedIndex: applied, Version: h.cfg.Version}
	for _, s := range view.Servers {
		s.API = h.nodeAPI(s.ID)
		out.Nodes = append(out.Nodes, s)
	}
	httpx.WriteJSON(ctx, fasthttp.StatusOK, out)
}

// nodeAPI is member id's API address: the cluster file's for the nodes it
// lists (a cluster restored from a backup onto new ports must not show the
// old ones), else what POST /v1/cluster/nodes stored.
func (h *clusterHandlers) nodeAPI(id string) string {
	if addr, ok := h.cfg.NodeAPIs[id]; ok {
		return addr
	}
	addr, _ := h.store.NodeAPI(id)
	return addr
}

func (h *clusterHandlers) addNode(ctx *fasthttp.RequestCtx) {
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
	c, cancel := h.opCtx()
	defer cancel()
	if err := h.store.SetNodeAPI(c, req.ID, req.API); err != nil {
		httpx.WriteError(ctx, err)
		return
	}
	add := h.store.AddVoter
	if req.Voter != nil && !*req.Voter {
		add = h.store.AddNonvoter
	}
	if err := add(c, req.ID, req.Raft); err != nil {
		h.membershipError(ctx, req.ID, err)
		return
	}
	h.clusterAfterChange(ctx, c)
}

// membershipError answers a refused membership change.
func (h *clusterHandlers) membershipError(ctx *fasthttp.RequestCtx, id string, err error) {
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

// nodePath reads the {id} of /v1/cluster/nodes/{id}[/promote], after the
// method, percent-decoded.
func nodePath(ctx *fasthttp.RequestCtx, p []string) bool {
	id, err := url.PathUnescape(p[0])
	if err != nil || !validNodeID(id) {
		httpx.WriteProblem(ctx, httpx.BadRequest, "want /v1/cluster/nodes/{id} with an id of 1-64 characters without '/', spaces or NUL")
		return false
	}
	p[0] = id
	return true
}

func (h *clusterHandlers) removeNode(ctx *fasthttp.RequestCtx, id string) {
	h.changeNode(ctx, id, h.store.RemoveServer)
}

func (h *clusterHandlers) promoteNode(ctx *fasthttp.RequestCtx, id string) {
	h.changeNode(ctx, id, h.store.Promote)
}

// changeNode makes a change to member id that takes ?force=1: promote
// or remove.
func (h *clusterHandlers) changeNode(ctx *fasthttp.RequestCtx, id string, change func(context.Context, string, bool) error) {
	force, ok := flagParam(ctx, "force")
	if !ok {
		return
	}
	c, cancel := h.opCtx()
	defer cancel()
	if err := change(c, id, force); err != nil {
		h.membershipError(ctx, id, err)
		return
	}
	h.clusterAfterChange(ctx, c)
}

// clusterAfterChange answers with the membership once this node has applied
// the change it just made (it may have been forwarded to the leader).
func (h *clusterHandlers) clusterAfterChange(ctx *fasthttp.RequestCtx, c context.Context) {
	// A node that removed itself has no leader to wait for: it answers
	// with its own view, which says it was removed.
	if err := h.store.Barrier(c); err != nil && !h.store.Removed() {
		httpx.WriteError(ctx, err)
		return
	}
	h.cluster(ctx)
}

// routes are the membership's: read it, add, remove and promote a node. A
// wrong method on a node's path is 405 whatever the id.
func (h *clusterHandlers) routes() []resource {
	return []resource{
		{path: "/v1/cluster", ops: []op{{method: "GET", id: "cluster", role: read, handle: plain(h.cluster), doc: opDoc{
			summary:     "The membership",
			description: "The members as one node sees them (the leader's view when it answers, else the node asked's), with what its probes found; leader, removed, indexes and version are the node asked's.",
			answers: map[int]string{
				200: jsonAnswer("The cluster.", "Cluster"),
				400: "Problem400BadRequestInvalidKey",
			},
		}}}},
		{path: "/v1/cluster/nodes", ops: []op{{method: "POST", id: "addNode", role: admin, handle: plain(h.addNode), doc: opDoc{
			summary:     "Add a member",
			description: "Adds a voter (or, with voter false, a non-voter) once it answers at its Raft address; answers with the membership after the change.",
			body:        jsonRequest("The new member.", "AddNodeRequest"),
			answers:     changeAnswers("Problem400BadRequestInvalidJsonInvalidKey"),
		}}}},
		{path: "/v1/cluster/nodes/{id...}", check: nodePath, methodFirst: true, params: []string{"NodeID"},
			ops: []op{{method: "DELETE", id: "removeNode", role: admin, handle: with1(h.removeNode), doc: opDoc{
				summary:     "Remove a member",
				description: "Removing the leader transfers leadership first. Refused (409) when it would leave fewer than a quorum of reachable voters, unless force=1.",
				params:      []string{"Force"},
				answers:     changeAnswers("Problem400BadRequestInvalidKey"),
			}}}},
		{path: "/v1/cluster/nodes/{id...}/promote", check: nodePath, methodFirst: true, params: []string{"NodeID"},
			ops: []op{{method: "POST", id: "promoteNode", role: admin, handle: with1(h.promoteNode), doc: opDoc{
				summary:     "Make a non-voter a voter",
				description: "Without force=1, only a reachable member that has caught up.",
				params:      []string{"Force"},
				answers:     changeAnswers("Problem400BadRequestInvalidKey"),
			}}}},
	}
}

// changeAnswers are a membership change's answers; bad names its 400s.
func changeAnswers(bad string) map[int]string {
	return map[int]string{
		200: jsonAnswer("The membership after the change.", "Cluster"),
		400: bad,
		404: "Problem404UnknownNode",
		409: "Problem409MembershipConflict",
	}
}
