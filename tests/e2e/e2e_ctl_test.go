package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type cliStatus struct {
	Nodes []struct {
		ID     string `json:"id"`
		Status *struct {
			Role      string `json:"role"`
			Leader    string `json:"leader"`
			ClusterID string `json:"cluster_id"`
			Ready     bool   `json:"ready"`
		} `json:"status"`
		Error string `json:"error"`
	} `json:"nodes"`
	Healthy bool `json:"healthy"`
}

// TestE2EOperatorCLI runs the operator's verbs against three real nodes:
// status through a leader kill, members and member remove/add, snapshot
// status of a saved backup (and of a damaged one), check-config, and
// compact shrinking a stopped node's file after a mass expiry.
func TestE2EOperatorCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := idemgateBinary(t)
	dir := t.TempDir()
	c := writeCluster(t, dir, "http://127.0.0.1:1", "")
	nodes := startNodes(t, bin, c.path, c.ids, c.apis)
	status := func() (int, cliStatus, string) {
		t.Helper()
		code, out, errOut := runCLI(t, bin, "status", "--config", c.path, "--json")
		var st cliStatus
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status --json: %v: %q %q", err, out, errOut)
		}
		return code, st, out
	}
	waitFor(t, "status healthy", 30*time.Second, func() bool { code, _, _ := status(); return code == 0 })
	code, st, _ := status()
	leader := ""
	for _, n := range st.Nodes {
		if n.Status == nil || !n.Status.Ready || n.Status.ClusterID == "" {
			t.Fatalf("status of a healthy cluster: %s %+v", n.ID, *n.Status)
		}
		if n.Status.Role == "leader" {
			leader = n.ID
		}
	}
	if code != 0 || !st.Healthy || leader == "" {
		t.Fatalf("status = %d %+v, want healthy with a leader", code, st)
	}
	if code, out, _ := runCLI(t, bin, "status", "--config", c.path); code != 0 || !strings.Contains(out, "3 of 3 nodes answer, 3 ready; leader "+leader) {
		t.Fatalf("status table = %d\n%s", code, out)
	}

	// The leader is killed: status says so and exits 1, then shows the
	// new leader; back, every node is ready again.
	nodes[leader].cmd.Process.Signal(syscall.SIGKILL)
	nodes[leader].cmd.Wait()
	code, out, _ := runCLI(t, bin, "status", "--config", c.path)
	if code != 1 || !strings.Contains(out, "unreachable") {
		t.Fatalf("status with the leader killed = %d\n%s", code, out)
	}
	waitFor(t, "a new leader in status", 20*time.Second, func() bool {
		_, st, _ := status()
		for _, n := range st.Nodes {
			if n.Status != nil && n.Status.Role == "leader" && n.ID != leader {
				return true
			}
		}
		return false
	})
	nodes[leader] = startNode(t, bin, c.path, leader, c.apis[leader])
	waitFor(t, "status healthy after the restart", 30*time.Second, func() bool { code, _, _ := status(); return code == 0 })

	// members, member remove, member add.
	members := func() []string {
		t.Helper()
		code, out, errOut := runCLI(t, bin, "members", "--config", c.path, "--json")
		var m struct{ Nodes []struct{ ID string } }
		if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
			t.Fatalf("members = %d %q %q", code, out, errOut)
		}
		var ids []string
		for _, n := range m.Nodes {
			ids = append(ids, n.ID)
		}
		return ids
	}
	if got := members(); len(got) != 3 {
		t.Fatalf("members = %v", got)
	}
	if code, out, errOut := runCLI(t, bin, "member", "remove", "n3", "--config", c.path); code != 0 || !strings.Contains(out, "removed n3") {
		t.Fatalf("member remove n3 = %d %q %q", code, out, errOut)
	}
	waitFor(t, "n3 gone from members", 10*time.Second, func() bool { return len(members()) == 2 })
	if code, out, errOut := runCLI(t, bin, "member", "add", "n3", "--config", c.path); code != 0 || !strings.Contains(out, "added n3") {
		t.Fatalf("member add n3 = %d %q %q", code, out, errOut)
	}
	waitFor(t, "n3 back in members", 10*time.Second, func() bool { return len(members()) == 3 })
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"member", "remove", "nope", "--config", c.path}, 1, "unknown"},
		{[]string{"member", "frobnicate", "n3", "--config", c.path}, 2, "want add, remove or promote"},
		{[]string{"member", "add", "n9", "--config", c.path}, 2, "--raft: required"},
		{[]string{"member", "remove", "--config", c.path}, 2, "ID: required"},
		{[]string{"member", "remove", "n1", "n2", "--config", c.path}, 2, "one ID only"},
		{[]string{"status"}, 2, "--config: required"},
		{[]string{"status", "--config", c.path, "--token", "a b"}, 2, "no whitespace"},
		{[]string{"members", "--config", filepath.Join(dir, "missing.yaml")}, 2, "missing.yaml"},
	} {
		code, out, errOut := runCLI(t, bin, tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v = %d %q %q; want exit %d, one line naming %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}

	// snapshot status of a saved backup, and of a damaged one.
	backup := filepath.Join(dir, "backup.snap")
	if code, out, errOut := runCLI(t, bin, "snapshot", "save", backup, "--api", c.apis["n1"]); code != 0 {
		t.Fatalf("snapshot save = %d %q %q", code, out, errOut)
	}
	code, out, errOut := runCLI(t, bin, "snapshot", "status", backup)
	if code != 0 || !strings.Contains(out, "a whole, checked backup") || !strings.Contains(out, "members n1, n2, n3") || !strings.Contains(out, "sha256 ") {
		t.Fatalf("snapshot status = %d %q %q", code, out, errOut)
	}
	raw, _ := os.ReadFile(backup)
	raw[len(raw)/2] ^= 0xff
	damaged := filepath.Join(dir, "damaged.snap")
	os.WriteFile(damaged, raw, 0o600)
	if code, out, errOut := runCLI(t, bin, "snapshot", "status", damaged); code != 1 || out != "" || !strings.Contains(errOut, "damaged.snap") {
		t.Errorf("snapshot status of a damaged file = %d %q %q, want exit 1 naming it", code, out, errOut)
	}

	// check-config: the cluster's file, and bad ones.
	if code, out, errOut := runCLI(t, bin, "check-config", c.path); code != 0 || !strings.Contains(out, "ok: nodes n1, n2, n3") {
		t.Errorf("check-config = %d %q %q", code, out, errOut)
	}
	for _, bad := range []struct{ name, yaml, want string }{
		{"unknown field", "nodes: [{id: n1, raft: 127.0.0.1:1, api: 127.0.0.1:2}]\nbogus: 1\n", "bogus"},
		{"exposed", "nodes: [{id: n1, raft: 10.9.9.9:7001, api: 127.0.0.1:2}]\n", "tls"},
		{"bad ttl", "nodes: [{id: n1, raft: 127.0.0.1:1, api: 127.0.0.1:2}]\nupstream: http://127.0.0.1:3\nroutes: [{name: pay, path: /pay, ttl: 24hours}]\n", "routes[0].ttl"},
		{"backlog pause over the interval", "nodes: [{id: n1, raft: 127.0.0.1:1, api: 127.0.0.1:2}]\nexpiry: {backlog_pause: 2s}\n", "expiry.backlog_pause"},
	} {
		path := filepath.Join(dir, bad.name+".yaml")
		os.WriteFile(path, []byte(bad.yaml), 0o644)
		if code, out, errOut := runCLI(t, bin, "check-config", path); code != 2 || out != "" || !strings.Contains(errOut, bad.want) {
			t.Errorf("check-config %s = %d %q %q, want exit 2 naming %q", bad.name, code, out, errOut, bad.want)
		}
	}

	// compact: a mass expiry leaves fsm.db at its largest; compacted while
	// the node is stopped, it shrinks, and the node starts and serves.
	var wg sync.WaitGroup
	value := strings.Repeat("x", 2048)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 2000; i += 8 {
				httpDo("PUT", fmt.Sprintf("http://%s/v1/kv/bulk-%d?ttl=1s", c.apis["n1"], i), value)
			}
		}()
	}
	wg.Wait()
	httpDo("PUT", "http://"+c.apis["n1"]+"/v1/kv/kept", "still here")
	waitFor(t, "the bulk keys expired and swept", 60*time.Second, func() bool {
		code, _, _, _ := httpDo("GET", "http://"+c.apis["n2"]+"/v1/kv/bulk-1999", "")
		return code == 404
	})
	time.Sleep(2 * time.Second) // the sweep's last batches
	nodes["n2"].cmd.Process.Signal(syscall.SIGTERM)
	nodes["n2"].cmd.Wait()
	fsmPath := filepath.Join(dir, "n2", "fsm.db")
	st0, err := os.Stat(fsmPath)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, bin, "compact", "--config", c.path, "--node", "n2")
	if code != 0 || !strings.Contains(out, "compacted") {
		t.Fatalf("compact = %d %q %q", code, out, errOut)
	}
	st1, err := os.Stat(fsmPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compact: %s", strings.TrimSpace(out))
	if st1.Size() >= st0.Size()/2 {
		t.Errorf("compact left fsm.db at %d of %d bytes, want under half after the mass expiry", st1.Size(), st0.Size())
	}
	nodes["n2"] = startNode(t, bin, c.path, "n2", c.apis["n2"])
	waitFor(t, "n2 ready after compact", 30*time.Second, func() bool {
		code, _, _, _ := httpDo("GET", "http://"+c.apis["n2"]+"/readyz", "")
		return code == 200
	})
	if code, _, body, _ := httpDo("GET", "http://"+c.apis["n2"]+"/v1/kv/kept", ""); code != 200 || body != "still here" {
		t.Errorf("kept after compact = %d %q", code, body)
	}
	if code, _, errOut := runCLI(t, bin, "compact", "--config", c.path, "--node", "n1"); code != 1 || !strings.Contains(errOut, "held by") {
		t.Errorf("compact of a running node = %d %q, want 1: its data dir is locked", code, errOut)
	}
}
