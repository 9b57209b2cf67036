package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// fakeNode is an API listener that says role of itself and creates
// every key it is sent, counting the writes.
func fakeNode(t *testing.T, role string, writes *atomic.Int64) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/status" {
			w.Write([]byte(`{"node":"n","role":"` + role + `"}`))
			return
		}
		writes.Add(1)
		w.Header().Set("ETag", `"1"`)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestLeaderViewFallsBack: the client starts writes at the node that says
// it leads; when that node cannot be reached, the write goes to another
// and the view is dropped; with no node leading, writes go to each in
// turn.
func TestLeaderViewFallsBack(t *testing.T) {
	var fw, lw atomic.Int64
	follower, leader := fakeNode(t, "follower", &fw), fakeNode(t, "leader", &lw)
	c, err := New(Config{APIs: []string{follower.URL, leader.URL}, MinBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c.leader.looking.Store(true) // no look beside the calls: this test looks itself
	c.lookForLeader()
	c.leader.looking.Store(true)
	ctx := context.Background()
	for range 4 {
		if _, _, err := c.KV.SetNX(ctx, "k", []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	if fw.Load() != 0 || lw.Load() != 4 {
		t.Fatalf("writes: follower %d, leader %d; want all 4 at the leader", fw.Load(), lw.Load())
	}
	leader.Close() // refuses connections: nothing is sent
	if _, _, err := c.KV.SetNX(ctx, "k", []byte("v"), 0); err != nil {
		t.Fatalf("a write while the leader's node is down: %v, want it answered by another", err)
	}
	if fw.Load() != 1 || c.leader.node.Load() != 0 {
		t.Fatalf("after the leader's node failed: follower %d writes, view %d; want 1 and none", fw.Load(), c.leader.node.Load())
	}
	c.lookForLeader() // no node leads now
	c.leader.looking.Store(true)
	if c.leader.node.Load() != 0 {
		t.Fatalf("view %d with no leader reachable, want none", c.leader.node.Load())
	}
}
