package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestRemovedNodeGatewayRefuses: payments stream into one node's gateway
// while that node is removed from the cluster. Every payment sent once the
// node had seen its removal is answered 503 not-ready with Retry-After and
// never reaches the upstream; so are its API writes, and, within a few of
// the store's samples, replays and pass-through requests too. The other
// nodes go on serving.
func TestRemovedNodeGatewayRefuses(t *testing.T) {
	gc := startClusterGateways(t, 3, "")
	c := gc.c
	leader := c.WaitLeader(5 * time.Second)
	ri := (leader + 1) % 3
	r := c.Store(ri)
	gw := gc.gwURLs[ri]
	if a := do(t, "POST", gw+"/pay", `{"amount":1}`, "Idempotency-Key", "paid-before", "X-User-Id", "u1"); a.Status != 201 {
		t.Fatalf("a payment before the removal = %d %s", a.Status, a.Body)
	}

	type sent struct {
		key     string
		removed bool // the node had seen its removal before the request was sent
		status  int
		problem string
		retry   string
	}
	var (
		mu    sync.Mutex
		log   []sent
		after int // requests sent once the removal was seen
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("during-%d-%d", w, n)
				removed := r.Removed()
				res, err := testsupport.Do("POST", gw+"/pay", `{"amount":1}`, "Idempotency-Key", key, "X-User-Id", "u1")
				if err != nil {
					t.Errorf("%s: %v", key, err)
					return
				}
				s := sent{key: key, removed: removed, status: res.Status, retry: res.Header.Get("Retry-After")}
				var p httpx.Problem
				if json.Unmarshal([]byte(res.Body), &p) == nil {
					s.problem = strings.TrimPrefix(p.Type, httpx.ProblemBase)
				}
				mu.Lock()
				log = append(log, s)
				if removed {
					after++
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // some payments before the removal
	if a := do(t, "DELETE", gc.apiURLs[leader]+"/v1/cluster/nodes/"+c.Cfgs[ri].NodeID, ""); a.Status != 200 {
		t.Fatalf("remove = %d %s", a.Status, a.Body)
	}
	testsupport.WaitFor(t, "100 payments after the node saw its removal", 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return after >= 100
	})
	close(stop)
	wg.Wait()

	before := 0
	for _, s := range log {
		switch {
		case !s.removed:
			before++
		case s.status != 503 || s.problem != "not-ready" || s.retry == "":
			t.Errorf("%s, sent once the node saw its removal: %d %s (Retry-After %q), want 503 not-ready with Retry-After", s.key, s.status, s.problem, s.retry)
		case gc.up.Executions(s.key) != 0:
			t.Errorf("%s, sent once the node saw its removal, reached the upstream", s.key)
		}
	}
	if before == 0 {
		t.Fatal("no payment was sent before the removal: the test says nothing of the moment it happened")
	}

	// Replays, pass-through requests and API writes are refused too.
	testsupport.WaitFor(t, "the gateway to see the removal", 5*time.Second, r.SeenRemoved)
	for _, tc := range []struct{ name, method, url, body string }{
		{"replay of a completed payment", "POST", gw + "/pay", `{"amount":1}`},
		{"pass-through", "GET", gw + "/anything", ""},
		{"API write", "PUT", gc.apiURLs[ri] + "/v1/kv/k", "v"},
	} {
		a := do(t, tc.method, tc.url, tc.body, "Idempotency-Key", "paid-before", "X-User-Id", "u1")
		if a.Status != 503 || a.ProblemType(t) != "not-ready" || a.Header.Get("Retry-After") == "" || !strings.Contains(a.Body, "removed") {
			t.Errorf("%s on a removed node = %d %s", tc.name, a.Status, a.Body)
		}
	}
	if n := gc.up.Executions("paid-before"); n != 1 {
		t.Errorf("paid-before executed %d times", n)
	}
	// The cluster goes on without it.
	other := gc.gwURLs[leader]
	if a := do(t, "POST", other+"/pay", `{"amount":1}`, "Idempotency-Key", "after", "X-User-Id", "u1"); a.Status != 201 {
		t.Fatalf("a payment on a member after the removal = %d %s", a.Status, a.Body)
	}
}
