package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/raftstore"
)

// health is what a node's /readyz and /healthz answer, and idemgate_ready.
type health struct {
	ready, healthy int
	readyType      string // problem type of a 503 readyz
	readyGauge     float64
}

func probeHealth(t *testing.T, url string) health {
	t.Helper()
	var h health
	r := do(t, "GET", url+"/readyz", "")
	h.ready = r.Status
	if r.Status != 200 {
		h.readyType = r.ProblemType(t)
	}
	h.healthy = do(t, "GET", url+"/healthz", "").Status
	m := do(t, "GET", url+"/metrics", "")
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader([]byte(m.Body)))
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	if f := families["idemgate_ready"]; f != nil && len(f.Metric) == 1 {
		h.readyGauge = f.Metric[0].GetGauge().GetValue()
	} else {
		h.readyGauge = -1
	}
	return h
}

// TestHealthStates: each state a node can be in, and what /readyz,
// /healthz and idemgate_ready say of it. A load balancer routes by readyz;
// a supervisor restarts on healthz.
func TestHealthStates(t *testing.T) {
	ac := startAPICluster(t, 3)
	leader := ac.c.WaitLeader(5 * time.Second)
	a, b := (leader+1)%3, (leader+2)%3
	want := func(state string, i int, ready, healthy int, gauge float64) {
		t.Helper()
		var got health
		testsupport.WaitFor(t, ac.c.Cfgs[i].NodeID+" "+state, 15*time.Second, func() bool {
			got = probeHealth(t, ac.urls[i])
			return got.ready == ready && got.healthy == healthy && got.readyGauge == gauge
		})
		if ready == 503 && got.readyType != "not-ready" {
			t.Fatalf("%s: readyz problem type %q, want not-ready", state, got.readyType)
		}
		t.Logf("%-10s %s: readyz %d, healthz %d, idemgate_ready %v", state, ac.c.Cfgs[i].NodeID, got.ready, got.healthy, got.readyGauge)
	}
	want("healthy", a, 200, 200, 1)

	// Removed: the node runs on, says so, and serves nothing.
	if r := do(t, "DELETE", ac.urls[leader]+"/v1/cluster/nodes/"+ac.c.Cfgs[a].NodeID, ""); r.Status != 200 {
		t.Fatalf("remove = %d %s", r.Status, r.Body)
	}
	want("removed", a, 503, 200, 0)
	r := do(t, "GET", ac.urls[a]+"/v1/cluster", "")
	var cl clusterJSON
	if err := json.Unmarshal([]byte(r.Body), &cl); err != nil || !cl.Removed {
		t.Fatalf("removed node's /v1/cluster = %s", r.Body)
	}
	if !strings.Contains(do(t, "GET", ac.urls[a]+"/readyz", "").Body, "removed") {
		t.Fatal("readyz of a removed node does not say it was removed")
	}

	// Shut down: Raft stopped for good (what the disk guard and a storage
	// failure do): neither ready nor healthy.
	ac.c.Store(b).Raft().Shutdown()
	want("shut down", b, 503, 503, 0)

	// No quorum: the leader's only other voter is gone; it steps down and
	// knows no leader, but the process is healthy.
	want("no quorum", leader, 503, 200, 0)
	if !strings.Contains(do(t, "GET", ac.urls[leader]+"/readyz", "").Body, "no leader") {
		t.Fatal("readyz without quorum does not say there is no leader")
	}
}

// TestHealthDiskGuard: below min_free the node refuses writes: not ready,
// still healthy (it serves reads and catches up; an operator frees space).
func TestHealthDiskGuard(t *testing.T) {
	var st syscall.Statfs_t
	dir := t.TempDir()
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Skipf("statfs: %v", err)
	}
	free := st.Bavail * uint64(st.Bsize)
	ac := startAPIClusterWith(t, 1, func(c *raftstore.Config) {
		// Twice the free space: refusing writes; a quarter of it (where
		// Raft is stopped) is half the free space, far below.
		c.MinFreeBytes, c.DiskCheckInterval = 2*free, 50*time.Millisecond
	}, nil)
	var got health
	testsupport.WaitFor(t, "the disk guard", 10*time.Second, func() bool {
		got = probeHealth(t, ac.urls[0])
		return got.ready == 503 && got.healthy == 200 && got.readyGauge == 0
	})
	if r := do(t, "GET", ac.urls[0]+"/readyz", ""); !strings.Contains(r.Body, "disk") {
		t.Fatalf("readyz under the disk guard = %s", r.Body)
	}
	if r := do(t, "PUT", ac.urls[0]+"/v1/kv/k", "v"); r.Status != 503 {
		t.Fatalf("write under the disk guard = %d %s", r.Status, r.Body)
	}
	m := do(t, "GET", ac.urls[0]+"/metrics", "").Body
	if !strings.Contains(m, "idemgate_disk_free_bytes ") || strings.Contains(m, "idemgate_disk_free_bytes 0\n") {
		t.Fatalf("idemgate_disk_free_bytes missing or zero:\n%s", grepLines(m, "idemgate_disk"))
	}
}

// TestPeerMetrics: every other member has a reachability and a last
// contact series; a stopped one goes to reachable 0.
func TestPeerMetrics(t *testing.T) {
	ac := startAPICluster(t, 3)
	leader := ac.c.WaitLeader(5 * time.Second)
	down := (leader + 1) % 3
	peer := ac.c.Cfgs[down].NodeID
	gauge := func(body, name string) (float64, bool) {
		parser := expfmt.NewTextParser(model.LegacyValidation)
		families, err := parser.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range families[name].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "peer" && l.GetValue() == peer {
					return m.GetGauge().GetValue(), true
				}
			}
		}
		return 0, false
	}
	testsupport.WaitFor(t, peer+" reachable in the leader's metrics", 10*time.Second, func() bool {
		body := do(t, "GET", ac.urls[leader]+"/metrics", "").Body
		r, ok := gauge(body, "idemgate_peer_reachable")
		c, ok2 := gauge(body, "idemgate_peer_last_contact_seconds")
		return ok && ok2 && r == 1 && c >= 0 && c < 5
	})
	ac.c.Stop(down)
	testsupport.WaitFor(t, peer+" unreachable in the leader's metrics", 10*time.Second, func() bool {
		r, ok := gauge(do(t, "GET", ac.urls[leader]+"/metrics", "").Body, "idemgate_peer_reachable")
		return ok && r == 0
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
