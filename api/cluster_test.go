package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestAPIMembershipHostile: every malformed or refused membership call gets
// its exact answer and changes nothing.
func TestAPIMembershipHostile(t *testing.T) {
	ac := startAPICluster(t, 3)
	leader := ac.c.WaitLeader(5 * time.Second)
	u := ac.urls[(leader+1)%3]
	down := (leader + 2) % 3
	cases := []struct {
		name, method, path, body string
		status                   int
		problem                  string
	}{
		{"unknown node", "DELETE", "/v1/cluster/nodes/nope", "", 404, "unknown-node"},
		{"promote unknown", "POST", "/v1/cluster/nodes/nope/promote", "", 404, "unknown-node"},
		{"force not a flag", "DELETE", "/v1/cluster/nodes/n1?force=yes", "", 400, "bad-request"},
		{"force on promote not a flag", "POST", "/v1/cluster/nodes/n1/promote?force=2", "", 400, "bad-request"},
		{"empty id", "DELETE", "/v1/cluster/nodes/", "", 400, "bad-request"},
		{"id with a slash", "DELETE", "/v1/cluster/nodes/a%2Fb", "", 400, "bad-request"},
		{"id with NUL", "DELETE", "/v1/cluster/nodes/a%00b", "", 400, "bad-request"},
		{"id too long", "DELETE", "/v1/cluster/nodes/" + strings.Repeat("x", 65), "", 400, "bad-request"},
		{"promote by GET", "GET", "/v1/cluster/nodes/n1/promote", "", 405, "method-not-allowed"},
		{"voter not a bool", "POST", "/v1/cluster/nodes", `{"id":"n9","raft":"127.0.0.1:1","api":"127.0.0.1:2","voter":"no"}`, 400, "invalid-json"},
		{"unknown field", "POST", "/v1/cluster/nodes", `{"id":"n9","raft":"127.0.0.1:1","api":"127.0.0.1:2","learner":true}`, 400, "invalid-json"},
		{"unreachable learner", "POST", "/v1/cluster/nodes", `{"id":"n9","raft":"127.0.0.1:1","api":"127.0.0.1:2","voter":false}`, 409, "membership-conflict"},
		{"voter made learner", "POST", "/v1/cluster/nodes", fmt.Sprintf(`{"id":%q,"raft":%q,"api":"127.0.0.1:2","voter":false}`,
			ac.c.Cfgs[leader].NodeID, ac.c.Cfgs[leader].RaftBind), 409, "membership-conflict"},
	}
	for _, tc := range cases {
		hdr := []string{}
		if tc.body != "" {
			hdr = []string{"Content-Type", "application/json"}
		}
		r := do(t, tc.method, u+tc.path, tc.body, hdr...)
		if r.Status != tc.status || r.ProblemType(t) != tc.problem {
			t.Errorf("%s: %s %s = %d %s, want %d %s", tc.name, tc.method, tc.path, r.Status, r.Body, tc.status, tc.problem)
		}
	}
	// With a voter down, removing a live one is refused, and says why.
	ac.c.Stop(down)
	live := ac.c.Cfgs[(leader+1)%3].NodeID
	r := do(t, "DELETE", u+"/v1/cluster/nodes/"+live, "")
	if r.Status != 409 || r.ProblemType(t) != "membership-conflict" || !strings.Contains(r.Body, "force") {
		t.Errorf("removal that loses the quorum = %d %s, want 409 naming force", r.Status, r.Body)
	}
	var cl clusterJSON
	r = do(t, "GET", u+"/v1/cluster", "")
	if err := json.Unmarshal([]byte(r.Body), &cl); err != nil || len(cl.Nodes) != 3 {
		t.Fatalf("membership changed by refused calls: %s", r.Body)
	}
}

// TestAPILearner: a non-voter added through the API catches up, shows as
// voter false, and is promoted.
func TestAPILearner(t *testing.T) {
	ac := startAPICluster(t, 3)
	leader := ac.c.WaitLeader(5 * time.Second)
	u := ac.urls[(leader+1)%3]
	body := fmt.Sprintf(`{"id":"n4","raft":%q,"api":"127.0.0.1:9","voter":false}`, startEmptyNode(t, ac, "n4"))
	r := postJSON(t, u+"/v1/cluster/nodes", body)
	var cl clusterJSON
	if r.Status != 200 || json.Unmarshal([]byte(r.Body), &cl) != nil {
		t.Fatalf("add learner = %d %s", r.Status, r.Body)
	}
	found := false
	for _, n := range cl.Nodes {
		if n.ID == "n4" {
			found = !n.Voter
		}
	}
	if !found {
		t.Fatalf("learner not listed as a non-voter: %s", r.Body)
	}
	testsupport.WaitFor(t, "the learner promoted", 15*time.Second, func() bool {
		r = do(t, "POST", u+"/v1/cluster/nodes/n4/promote", "")
		if r.Status == 409 {
			return false // not caught up yet
		}
		if r.Status != 200 {
			t.Fatalf("promote = %d %s", r.Status, r.Body)
		}
		return true
	})
	if err := json.Unmarshal([]byte(r.Body), &cl); err != nil {
		t.Fatal(err)
	}
	for _, n := range cl.Nodes {
		if !n.Voter {
			t.Fatalf("after promotion %s is not a voter: %s", n.ID, r.Body)
		}
	}
}

// TestAPIMethodNotAllowedSaysAllow: every 405 names the methods allowed (a
// problem document resets the response, so Allow is set after it).
func TestAPIMethodNotAllowedSaysAllow(t *testing.T) {
	t.Parallel()
	ac := startAPIs(t, 1, nil)
	for path, allow := range map[string]string{
		"/v1/kv/k":                    "GET, HEAD, PUT, POST, DELETE",
		"/v1/records/pay/k":           "GET, HEAD, DELETE",
		"/v1/cluster":                 "GET, HEAD",
		"/v1/cluster/nodes/n1":        "DELETE",
		"/v1/cluster/nodes/x/promote": "POST",
	} {
		r := do(t, "PATCH", ac.urls[0]+path, "")
		if r.Status != 405 || r.Header.Get("Allow") != allow {
			t.Errorf("PATCH %s = %d, Allow %q; want 405 with %q", path, r.Status, r.Header.Get("Allow"), allow)
		}
	}
}

// TestAPIStatus: every node says what it is: the leader and a follower agree
// on the leader, the term and the cluster id; a stopped Raft says shutdown
// and not ready; anything but GET is refused.
func TestAPIStatus(t *testing.T) {
	ac := startAPICluster(t, 3)
	leader := ac.c.WaitLeader(5 * time.Second)
	follower := (leader + 1) % 3
	get := func(i int) statusJSON {
		t.Helper()
		r := do(t, "GET", ac.urls[i]+"/v1/status", "")
		var st statusJSON
		if r.Status != 200 || json.Unmarshal([]byte(r.Body), &st) != nil {
			t.Fatalf("GET /v1/status on n%d = %d %s", i+1, r.Status, r.Body)
		}
		return st
	}
	l, f := get(leader), get(follower)
	id := ac.c.Cfgs[leader].NodeID
	if l.Role != "leader" || l.Leader != id || !l.Ready || l.ClusterID == "" || l.Node != id {
		t.Errorf("leader's status = %+v", l)
	}
	if f.Role != "follower" || f.Leader != id || f.Term != l.Term || f.ClusterID != l.ClusterID || !f.Ready {
		t.Errorf("follower's status = %+v, leader's %+v", f, l)
	}
	if f.AppliedIndex == 0 || f.AppliedIndex > f.CommitIndex || f.CommitIndex > f.LastIndex {
		t.Errorf("follower's indexes = applied %d, commit %d, last %d", f.AppliedIndex, f.CommitIndex, f.LastIndex)
	}
	if r := do(t, "POST", ac.urls[follower]+"/v1/status", ""); r.Status != 405 || r.ProblemType(t) != "method-not-allowed" {
		t.Errorf("POST /v1/status = %d %s, want 405", r.Status, r.Body)
	}
	ac.c.Store(follower).Raft().Shutdown()
	if st := get(follower); st.Role != "shutdown" || st.Ready || st.NotReady == "" {
		t.Errorf("status after Raft stopped = %+v, want shutdown, not ready, with the reason", st)
	}
}
