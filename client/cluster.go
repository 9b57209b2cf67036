package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// Cluster is the operator's part of the API: what each node says of itself,
// the membership, and changes to it (an admin token). The calls of the
// idemgate status and member commands.
type Cluster struct{ c *Client }

// NodeStatus is what one node says of itself (GET /v1/status).
type NodeStatus struct {
	Node         string `json:"node"`
	Version      string `json:"version"`
	Role         string `json:"role"` // leader, follower, candidate, removed, waiting, shutdown
	Term         uint64 `json:"term"`
	Leader       string `json:"leader"`
	ClusterID    string `json:"cluster_id"`
	LastIndex    uint64 `json:"last_index"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	Ready        bool   `json:"ready"`
	NotReady     string `json:"not_ready,omitempty"`
}

// Membership is GET /v1/cluster: the members as the leader sees them.
type Membership struct {
	Leader    string   `json:"leader"`
	ClusterID string   `json:"cluster_id"`
	View      string   `json:"view"` // whose probes the reachability figures are
	Removed   bool     `json:"removed"`
	Members   []Member `json:"nodes"`
}

// Member is one member of the configuration. The server's is
// storeapi.Server; the client keeps its own, as it imports nothing of the
// server (a program that calls a cluster builds without it).
type Member struct {
	ID            string `json:"id"`
	Raft          string `json:"raft"`
	API           string `json:"api"`
	State         string `json:"state"`
	Voter         bool   `json:"voter"`
	Reachable     bool   `json:"reachable"`
	LastContactMS int64  `json:"last_contact_ms"`
	MatchIndex    uint64 `json:"match_index"`
	Lag           uint64 `json:"lag"`
}

// Status asks the node at endpoint (one of Config.APIs, or any API
// listener) what it is. It does not fail over: the answer is that node's.
func (cl *Cluster) Status(ctx context.Context, endpoint string) (*NodeStatus, error) {
	base, err := checkEndpoints("endpoint", []string{endpoint})
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	if cl.c.cfg.APIToken != "" {
		h.Set("Authorization", "Bearer "+cl.c.cfg.APIToken)
	}
	a, err := cl.c.send(ctx, base[0], http.MethodGet, "/v1/status", h, nil)
	if err != nil {
		return nil, &Error{Attempts: 1, Err: err}
	}
	if a.status != http.StatusOK {
		return nil, a.errorOf("", 1)
	}
	var st NodeStatus
	if err := json.Unmarshal(a.body, &st); err != nil {
		return nil, fmt.Errorf("client: %s/v1/status: %w", base[0], err)
	}
	return &st, nil
}

// Members lists the cluster's members, from whichever node answers.
func (cl *Cluster) Members(ctx context.Context) (*Membership, error) {
	a, err := cl.c.api(ctx, safe, http.MethodGet, "/v1/cluster", nil, nil)
	if err != nil {
		return nil, err
	}
	if a.status != http.StatusOK {
		return nil, a.errorOf("", 1)
	}
	var m Membership
	if err := json.Unmarshal(a.body, &m); err != nil {
		return nil, fmt.Errorf("client: /v1/cluster: %w", err)
	}
	return &m, nil
}

// Add adds node id (Raft address raft, API address api) as a voter, or
// with voter false as a non-voter that catches up without counting for
// the quorum. The node must be running (waiting to be added).
func (cl *Cluster) Add(ctx context.Context, id, raft, api string, voter bool) error {
	body, _ := json.Marshal(struct {
		ID    string `json:"id"`
		Raft  string `json:"raft"`
		API   string `json:"api,omitempty"`
		Voter bool   `json:"voter"`
	}{id, raft, api, voter})
	h := http.Header{"Content-Type": {"application/json"}}
	return cl.change(ctx, http.MethodPost, "/v1/cluster/nodes", h, body)
}

// Remove removes member id. Without force a removal that would leave fewer
// reachable voters than a quorum is refused.
func (cl *Cluster) Remove(ctx context.Context, id string, force bool) error {
	return cl.change(ctx, http.MethodDelete, "/v1/cluster/nodes/"+url.PathEscape(id)+forceQuery(force), nil, nil)
}

// Promote makes non-voter id a voter; without force only once it caught up.
func (cl *Cluster) Promote(ctx context.Context, id string, force bool) error {
	return cl.change(ctx, http.MethodPost, "/v1/cluster/nodes/"+url.PathEscape(id)+"/promote"+forceQuery(force), nil, nil)
}

// change sends a membership change. It is sent to another node only when
// nothing was sent: a change the first node made is not made twice.
func (cl *Cluster) change(ctx context.Context, method, path string, h http.Header, body []byte) error {
	a, err := cl.c.api(ctx, once, method, path, h, body)
	if err != nil {
		return err
	}
	if a.status/100 != 2 {
		return a.errorOf("", 1)
	}
	return nil
}

func forceQuery(force bool) string {
	if force {
		return "?force=1"
	}
	return ""
}

// Endpoints are the API endpoints the client was given.
func (c *Client) Endpoints() []string { return append([]string(nil), c.apis...) }
