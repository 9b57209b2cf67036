package client

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"
)

// A write sent to a follower costs the cluster a forwarding: the follower
// sends it on to the leader and relays the answer, a round trip and a
// frame each way more than at the leader. So the client learns which of
// Config.APIs the leader serves (each node's GET /v1/status says its
// role) and starts its writes there. The view is a hint, never needed:
// while the client has none, or when the node it names fails a call, the
// call goes where it went without one (spread over the nodes, moving on
// from a node that failed it), and any node answers a write as the leader
// would. A leader that changes while its old node still answers (as a
// follower, forwarding) is found again when the view expires.

// leaderViewTTL is how long a learned leader is used before it is asked
// for again: a leadership change costs each write at most this long of
// forwarding, and a client a few status calls per node each time.
const leaderViewTTL = 5 * time.Second

// leaderProbeTimeout bounds the status calls of one look for the leader.
const leaderProbeTimeout = 2 * time.Second

// leaderView is what the client knows of the leader: the index in apis
// of its node plus one (0: none known), and when it was learned.
type leaderView struct {
	node    atomic.Int64
	learned atomic.Int64 // Unix ns
	looking atomic.Bool  // a look is under way
}

// writeStart returns the node a write starts at: the leader's when the
// client knows it, else the next in turn. A view that is missing or old
// starts a look for the leader beside the call, which does not wait.
func (c *Client) writeStart() int {
	v := &c.leader
	node, learned := int(v.node.Load()), v.learned.Load()
	if node == 0 || time.Since(time.Unix(0, learned)) > leaderViewTTL {
		if len(c.apis) > 1 && v.looking.CompareAndSwap(false, true) {
			go c.lookForLeader()
		}
	}
	if node > 0 && node <= len(c.apis) {
		return node - 1
	}
	return c.start(len(c.apis))
}

// leaderFailed forgets the leader when its node failed a call: the next
// writes go where they would without a view until a look finds it again.
func (c *Client) leaderFailed(node int) {
	c.leader.node.CompareAndSwap(int64(node+1), 0)
}

// lookForLeader asks each node its role and keeps the one that leads, or
// none.
func (c *Client) lookForLeader() {
	defer c.leader.looking.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), leaderProbeTimeout)
	defer cancel()
	found := 0
	for i, base := range c.apis {
		if c.leads(ctx, base) {
			found = i + 1
			break
		}
	}
	c.leader.node.Store(int64(found))
	c.leader.learned.Store(time.Now().UnixNano())
}

// leads reports whether the node at base says it is the leader.
func (c *Client) leads(ctx context.Context, base string) bool {
	h := http.Header{}
	if c.cfg.APIToken != "" {
		h.Set("Authorization", "Bearer "+c.cfg.APIToken)
	}
	a, err := c.send(ctx, base, http.MethodGet, "/v1/status", h, nil)
	if err != nil || a.status != http.StatusOK {
		return false
	}
	var st struct {
		Role string `json:"role"`
	}
	return json.Unmarshal(a.body, &st) == nil && st.Role == "leader"
}
