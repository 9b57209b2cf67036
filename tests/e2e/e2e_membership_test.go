package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// clusterAnswer is what this test reads of GET /v1/cluster, by the names
// on the wire.
type clusterAnswer struct {
	Leader  string `json:"leader"`
	Removed bool   `json:"removed"`
	Nodes   []struct {
		ID        string `json:"id"`
		Raft      string `json:"raft"`
		State     string `json:"state"`
		Reachable bool   `json:"reachable"`
	} `json:"nodes"`
}

// clusterOf reads GET /v1/cluster from a node's API.
func clusterOf(addr string) (clusterAnswer, error) {
	var cl clusterAnswer
	code, _, body, err := httpDo("GET", "http://"+addr+"/v1/cluster", "")
	if err == nil && code != 200 {
		err = fmt.Errorf("GET /v1/cluster = %d %s", code, body)
	}
	if err == nil {
		err = json.Unmarshal([]byte(body), &cl)
	}
	return cl, err
}

func readyz(api string) int {
	code, _, _, err := httpDo("GET", "http://"+api+"/readyz", "")
	if err != nil {
		return 0
	}
	return code
}

// TestE2EOperatorMembership is docs/operations.md's membership walk-through with real
// processes: remove the leader (it hands leadership on, says it was
// removed, and comes back without a restart); then a machine dies: a
// removal that would lose the quorum is refused, the dead node is removed,
// and a replacement with an empty data dir joins (--join) and catches up.
func TestE2EOperatorMembership(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := idemgateBinary(t)
	dir := t.TempDir()
	c := writeCluster(t, dir, "http://127.0.0.1:1", "")
	nodes := startNodes(t, bin, c.path, c.ids, c.apis)
	leader := waitClusterReady(t, c, c.ids)
	for i := 0; i < 20; i++ {
		if code, _, body, err := httpDo("PUT", fmt.Sprintf("http://%s/v1/kv/k%d", c.apis[c.ids[i%3]], i), "v"); err != nil || code != 200 {
			t.Fatalf("write k%d = %d %s %v", i, code, body, err)
		}
	}
	other := func(not ...string) string {
		for _, id := range c.ids {
			if !strings.Contains(strings.Join(not, ","), id) {
				return id
			}
		}
		return ""
	}

	// Remove the leader through a follower.
	asker := other(leader)
	code, _, body, err := httpDo("DELETE", "http://"+c.apis[asker]+"/v1/cluster/nodes/"+leader, "")
	if err != nil || code != 200 {
		t.Fatalf("remove the leader %s = %d %s %v", leader, code, body, err)
	}
	waitFor(t, "the old leader to say it was removed", 10*time.Second, func() bool {
		cl, err := clusterOf(c.apis[leader])
		return err == nil && cl.Removed && readyz(c.apis[leader]) == 503
	})
	waitFor(t, "a new leader", 10*time.Second, func() bool {
		cl, err := clusterOf(c.apis[asker])
		return err == nil && cl.Leader != "" && cl.Leader != leader && len(cl.Nodes) == 2
	})
	waitFor(t, "the removed node to log its removal", 5*time.Second, func() bool {
		return strings.Count(nodes[leader].log.String(), "removed from the cluster") == 1
	})
	add := fmt.Sprintf(`{"id":%q,"raft":%q,"api":%q}`, leader, c.rafts[leader], c.apis[leader])
	if code, _, body, err := httpDo("POST", "http://"+c.apis[asker]+"/v1/cluster/nodes", add, "Content-Type", "application/json"); err != nil || code != 200 {
		t.Fatalf("re-add %s = %d %s %v", leader, code, body, err)
	}
	waitFor(t, "the re-added node ready, without a restart", 15*time.Second, func() bool { return readyz(c.apis[leader]) == 200 })

	// A machine dies.
	cl, err := clusterOf(c.apis[asker])
	if err != nil {
		t.Fatal(err)
	}
	dead := other(cl.Leader)
	live := other(cl.Leader, dead)
	nodes[dead].cmd.Process.Signal(syscall.SIGKILL)
	nodes[dead].cmd.Wait()
	waitFor(t, "the leader to see "+dead+" unreachable", 10*time.Second, func() bool {
		cl, err := clusterOf(c.apis[live])
		for _, n := range cl.Nodes {
			if n.ID == dead {
				return err == nil && !n.Reachable && n.State == "unreachable"
			}
		}
		return false
	})
	code, _, body, _ = httpDo("DELETE", "http://"+c.apis[live]+"/v1/cluster/nodes/"+live, "")
	if code != 409 || !strings.Contains(body, "force") {
		t.Fatalf("removing a live node while %s is dead = %d %s, want 409", dead, code, body)
	}
	if code, _, body, _ := httpDo("DELETE", "http://"+c.apis[live]+"/v1/cluster/nodes/"+dead, ""); code != 200 {
		t.Fatalf("remove the dead %s = %d %s", dead, code, body)
	}
	// Its replacement: same id and addresses, an empty data dir, --join.
	if err := os.RemoveAll(filepath.Join(dir, dead)); err != nil {
		t.Fatal(err)
	}
	startNode(t, bin, c.path, dead, c.apis[dead], "--join")
	add = fmt.Sprintf(`{"id":%q,"raft":%q,"api":%q}`, dead, c.rafts[dead], c.apis[dead])
	waitFor(t, "the replacement added", 15*time.Second, func() bool {
		code, _, _, err := httpDo("POST", "http://"+c.apis[live]+"/v1/cluster/nodes", add, "Content-Type", "application/json")
		return err == nil && code == 200 // 409 until its port answers
	})
	waitFor(t, "the replacement ready", 15*time.Second, func() bool { return readyz(c.apis[dead]) == 200 })
	for i := 0; i < 20; i++ {
		code, _, body, err := httpDo("GET", fmt.Sprintf("http://%s/v1/kv/k%d", c.apis[dead], i), "")
		if err != nil || code != 200 || body != "v" {
			t.Fatalf("replacement's k%d = %d %q %v", i, code, body, err)
		}
	}
	cl, err = clusterOf(c.apis[dead])
	if err != nil || len(cl.Nodes) != 3 {
		t.Fatalf("cluster after the replacement = %+v %v", cl, err)
	}
}
