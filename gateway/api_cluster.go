package gateway

// The API's cluster view and membership changes.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/raftstore"
)

// ClusterJSON is GET /v1/cluster.
type ClusterJSON struct {
	Leader       string     `json:"leader"`
	Nodes        []NodeJSON `json:"nodes"`
	CommitIndex  uint64     `json:"commit_index"`
	AppliedIndex uint64     `json:"applied_index"`
}

// NodeJSON is one member in ClusterJSON.
type NodeJSON struct {
	ID    string `json:"id"`
	Raft  string `json:"raft"`
	API   string `json:"api"`
	State string `json:"state"`
	Voter bool   `json:"voter"`
}

func (a *API) cluster(ctx *fasthttp.RequestCtx) {
	servers, err := a.store.Servers()
	if err != nil {
		writeStoreError(ctx, err)
		return
	}
	leader, _ := a.store.Leader()
	commit, applied := a.store.Indexes()
	out := ClusterJSON{Leader: leader, Nodes: []NodeJSON{}, CommitIndex: commit, AppliedIndex: applied}
	for _, s := range servers {
		out.Nodes = append(out.Nodes, NodeJSON{ID: s.ID, Raft: s.RaftAddr, API: a.nodeAPI(s.ID), State: s.State, Voter: s.Voter})
	}
	writeJSON(ctx, fasthttp.StatusOK, out)
}

func (a *API) nodeAPI(id string) string {
	if e, err := a.store.KV(context.Background(), []byte(nodeAPIPrefix+id), true); err == nil {
		return string(e.Value)
	}
	return a.cfg.NodeAPIs[id]
}

func (a *API) addNode(ctx *fasthttp.RequestCtx) {
	var req struct {
		ID   string `json:"id"`
		Raft string `json:"raft"`
		API  string `json:"api"`
	}
	if !decodeJSON(ctx, &req) {
		return
	}
	if req.ID == "" || strings.ContainsAny(req.ID, "\x00/ ") || len(req.ID) > 64 {
		writeProblem(ctx, probBadRequest, "id: want 1-64 characters without '/', spaces or NUL")
		return
	}
	for field, addr := range map[string]string{"raft": req.Raft, "api": req.API} {
		if _, _, err := net.SplitHostPort(addr); err != nil || addr == "" {
			writeProblem(ctx, probBadRequest, fmt.Sprintf("%s: %q is not host:port", field, addr))
			return
		}
	}
	c, cancel := a.opCtx()
	defer cancel()
	if _, err := a.store.KVSet(c, []byte(nodeAPIPrefix+req.ID), []byte(req.API), 0, fsm.SetPlain, 0); err != nil {
		writeStoreError(ctx, err)
		return
	}
	if err := a.store.AddVoter(c, req.ID, req.Raft); err != nil {
		if raftstore.Unavailable(err) {
			writeStoreError(ctx, err)
		} else {
			writeProblem(ctx, probMembershipConflict, err.Error())
		}
		return
	}
	a.clusterAfterChange(ctx, c)
}

// clusterAfterChange answers with the membership once this node has applied
// the change it just made (it may have been forwarded to the leader).
func (a *API) clusterAfterChange(ctx *fasthttp.RequestCtx, c context.Context) {
	if err := a.store.Barrier(c); err != nil {
		writeStoreError(ctx, err)
		return
	}
	a.cluster(ctx)
}

func (a *API) removeNode(ctx *fasthttp.RequestCtx, rawID string) {
	id, err := url.PathUnescape(rawID)
	if err != nil || id == "" {
		writeProblem(ctx, probBadRequest, "want /v1/cluster/nodes/{id}")
		return
	}
	c, cancel := a.opCtx()
	defer cancel()
	err = a.store.RemoveServer(c, id)
	switch {
	case errors.Is(err, raftstore.ErrUnknownNode):
		writeProblem(ctx, probUnknownNode, fmt.Sprintf("no node %q in the cluster", id))
	case err != nil && raftstore.Unavailable(err):
		writeStoreError(ctx, err)
	case err != nil:
		writeProblem(ctx, probMembershipConflict, err.Error())
	default:
		a.clusterAfterChange(ctx, c)
	}
}
