package api

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/loopback"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/raftstore"
	"github.com/idemgate/idemgate/storeapi"
)

// startEmptyNode starts node id with an empty data directory, waiting to
// be added, and returns its Raft address; it stops when the test ends.
func startEmptyNode(t *testing.T, ac *apiCluster, id string) string {
	t.Helper()
	addrs, err := loopback.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := raftstore.Open(ac.c.JoinConfig(id, addrs[0]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return addrs[0]
}

// checkNodeView fails t for a member whose figures contradict each other:
// a state other than the documented ones, a member not reachable that
// claims a contact now (last_contact_ms 0) or a state it reported, or one
// reachable that was never contacted.
func checkNodeView(t *testing.T, when string, n storeapi.Server) {
	t.Helper()
	switch {
	case n.Removed:
		return
	case n.Reachable && (n.LastContactMS < 0 || n.State == "unreachable" || n.State == "unknown"):
		t.Errorf("%s: %s reachable but last_contact_ms %d, state %q", when, n.ID, n.LastContactMS, n.State)
	case !n.Reachable && n.State == "unknown" && n.LastContactMS != -1:
		t.Errorf("%s: %s never answered (unknown) but last_contact_ms %d", when, n.ID, n.LastContactMS)
	case !n.Reachable && n.State != "unknown" && n.State != "unreachable":
		t.Errorf("%s: %s not reachable, yet state %q (last_contact_ms %d): a state it never reported", when, n.ID, n.State, n.LastContactMS)
	case !n.Reachable && n.LastContactMS == 0:
		t.Errorf("%s: %s not reachable with last_contact_ms 0", when, n.ID)
	}
}

// TestClusterViewOneNodes: GET /v1/cluster is one node's view. Asked on a
// follower under a steady write load it is the leader's, and every
// member's lag is measured at the moment of its answer (a few entries),
// never the leader's log now against a member's answer a second old. A
// member just added shows unknown, never contacted, until its first probe,
// then reachable: never "not reachable, last contact 0 ms".
func TestClusterViewOneNodes(t *testing.T) {
	ac := startAPICluster(t, 3)
	leader := ac.c.WaitLeader(5 * time.Second)
	follower := (leader + 1) % 3
	get := func(url string) clusterJSON {
		t.Helper()
		r := do(t, "GET", url+"/v1/cluster", "")
		var cl clusterJSON
		if r.Status != 200 || json.Unmarshal([]byte(r.Body), &cl) != nil {
			t.Fatalf("GET /v1/cluster = %d %s", r.Status, r.Body)
		}
		return cl
	}
	testsupport.WaitFor(t, "every member probed by the leader", 10*time.Second, func() bool {
		for _, n := range get(ac.urls[follower]).Nodes {
			if !n.Reachable {
				return false
			}
		}
		return true
	})

	// Writers without pause: hundreds of entries a second.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := ac.c.Store(w % 3)
			for n := 0; ctx.Err() == nil; n++ {
				wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
				if _, err := s.ApplyKV(wctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprint("v", w, "-", n%100)), Value: []byte("x")})); err == nil {
					writes.Add(1)
				}
				wcancel()
			}
		}()
	}
	var maxLag uint64
	for i := 0; i < 60; i++ {
		cl := get(ac.urls[follower])
		if cl.View != ac.c.Cfgs[leader].NodeID || cl.Leader != cl.View {
			t.Fatalf("a follower's /v1/cluster: view %q, leader %q; want the leader's view", cl.View, cl.Leader)
		}
		if len(cl.Nodes) != 3 {
			t.Fatalf("%d members listed, want 3: %+v", len(cl.Nodes), cl.Nodes)
		}
		for _, n := range cl.Nodes {
			checkNodeView(t, "under load", n)
			if n.ID == cl.View && (n.Lag != 0 || n.State != "leader") {
				t.Errorf("the viewing leader's own entry: lag %d, state %q", n.Lag, n.State)
			}
			maxLag = max(maxLag, n.Lag)
		}
		time.Sleep(25 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	t.Logf("%d writes meanwhile; the largest lag shown: %d entries", writes.Load(), maxLag)
	if writes.Load() < 200 {
		t.Fatalf("only %d writes: not the load this test is about", writes.Load())
	}
	if maxLag > 128 {
		t.Errorf("a member shown %d entries behind under a load it keeps up with: its lag was not taken at its answer", maxLag)
	}

	// A member just added.
	r := postJSON(t, ac.urls[leader]+"/v1/cluster/nodes", fmt.Sprintf(`{"id":"n4","raft":%q,"api":"127.0.0.1:9"}`, startEmptyNode(t, ac, "n4")))
	var cl clusterJSON
	if r.Status != 200 || json.Unmarshal([]byte(r.Body), &cl) != nil {
		t.Fatalf("add n4 = %d %s", r.Status, r.Body)
	}
	views := []clusterJSON{cl}
	testsupport.WaitFor(t, "n4 reachable in the leader's view", 10*time.Second, func() bool {
		cl := get(ac.urls[follower])
		views = append(views, cl)
		for _, n := range cl.Nodes {
			if n.ID == "n4" {
				return n.Reachable
			}
		}
		return false
	})
	for i, cl := range views {
		for _, n := range cl.Nodes {
			checkNodeView(t, fmt.Sprintf("view %d after adding n4", i), n)
		}
	}
}
