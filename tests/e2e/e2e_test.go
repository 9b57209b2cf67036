package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/boltcheck"
	"github.com/idemgate/idemgate/internal/loopback"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// freePorts returns n distinct free loopback addresses (demo.go's helper).
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	ports, err := loopback.FreeAddrs(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

type e2eNode struct {
	id, api string
	cmd     *exec.Cmd
	log     *testsupport.Buffer
}

// startNodes starts the nodes ids of the cluster file with --bootstrap: a
// new cluster forms once all the file's nodes run; a node with data
// ignores the flag, and one without waits to be added while others hold
// the cluster.
func startNodes(t *testing.T, bin, cfgPath string, ids []string, apis map[string]string) map[string]*e2eNode {
	nodes := map[string]*e2eNode{}
	for _, id := range ids {
		nodes[id] = startNode(t, bin, cfgPath, id, apis[id], "--bootstrap")
	}
	return nodes
}

// startNode starts `idemgate serve` for node id with extra flags; it is
// killed when the test ends, and its output logged if the test failed.
func startNode(t *testing.T, bin, cfgPath, id, api string, extra ...string) *e2eNode {
	t.Helper()
	return startCmd(t, &e2eNode{id: id, api: api, cmd: serveCmd(bin, cfgPath, id, extra...)})
}

// serveCmd is `idemgate serve` of node id with extra flags.
func serveCmd(bin, cfgPath, id string, extra ...string) *exec.Cmd {
	return exec.Command(bin, append([]string{"serve", "--config", cfgPath, "--node", id, "--log-level", "warn"}, extra...)...)
}

// startCmd starts n's command; it is killed when the test ends, and its
// output logged if the test failed.
func startCmd(t *testing.T, n *e2eNode) *e2eNode {
	t.Helper()
	n.log = &testsupport.Buffer{}
	n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if n.cmd.ProcessState == nil {
			n.cmd.Process.Kill()
			n.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("--- %s output:\n%s", n.id, n.log.String())
		}
	})
	return n
}

// e2eCluster is a generated cluster file of three nodes on free loopback
// ports.
type e2eCluster struct {
	path             string
	ids              []string
	apis, gws, rafts map[string]string
}

// writeCluster writes a 3-node cluster file into dir: free loopback ports,
// data_dir in dir, fast Raft timeouts, upstream, then extra (YAML, as is).
func writeCluster(t *testing.T, dir, upstream, extra string) *e2eCluster {
	t.Helper()
	c := &e2eCluster{path: filepath.Join(dir, "cluster.yaml"), ids: []string{"n1", "n2", "n3"},
		apis: map[string]string{}, gws: map[string]string{}, rafts: map[string]string{}}
	ports := freePorts(t, 9)
	var cfg strings.Builder
	cfg.WriteString("nodes:\n")
	for i, id := range c.ids {
		c.apis[id], c.gws[id], c.rafts[id] = ports[3*i], ports[3*i+1], ports[3*i+2]
		fmt.Fprintf(&cfg, "  - {id: %s, raft: %s, api: %s, listen: %s}\n", id, ports[3*i+2], c.apis[id], c.gws[id])
	}
	fmt.Fprintf(&cfg, "data_dir: %s/{id}\nupstream: %s\nraft: {heartbeat_timeout: 500ms, election_timeout: 500ms}\n%s", dir, upstream, extra)
	if err := os.WriteFile(c.path, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

func httpDo(method, url, body string, hdr ...string) (int, http.Header, string, error) {
	r, err := testsupport.Do(method, url, body, hdr...)
	return r.Status, r.Header, r.Body, err
}

func waitFor(t *testing.T, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	testsupport.WaitFor(t, what, timeout, ok)
}

// TestE2EThreeProcesses builds the binary, runs three `idemgate serve`
// processes from a generated cluster file, exercises the API over HTTP,
// SIGKILLs the leader and checks the data on the survivors.
func TestE2EThreeProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := idemgateBinary(t)
	dir := t.TempDir()
	c := writeCluster(t, dir, "http://127.0.0.1:1", "")
	ids, apis := c.ids, c.apis
	nodes := startNodes(t, bin, c.path, ids, apis)

	// Every node knows the leader and is ready, as a load balancer waits:
	// a node that has not heard from the leader yet answers 503 at once.
	leader := waitClusterReady(t, c, ids)

	// Writes through every node.
	for i := 0; i < 30; i++ {
		id := ids[i%3]
		code, _, body, err := httpDo("PUT", fmt.Sprintf("http://%s/v1/kv/key-%d?nx=1", apis[id], i), fmt.Sprint("value-", i))
		if err != nil || code != 201 {
			t.Fatalf("SETNX key-%d via %s = %d %s %v", i, id, code, body, err)
		}
	}
	if code, _, body, _ := httpDo("PUT", "http://"+apis["n3"]+"/v1/kv/key-0?nx=1", "other"); code != 409 || body != "value-0" {
		t.Fatalf("second SETNX = %d %q, want 409 with the current value", code, body)
	}
	code, _, body, _ := httpDo("POST", "http://"+apis["n1"]+"/v1/tokens", `{"scope":"pay","ttl":"10m"}`, "Content-Type", "application/json")
	var tok struct{ Token string }
	if json.Unmarshal([]byte(body), &tok); code != 201 || tok.Token == "" {
		t.Fatalf("issue token = %d %s", code, body)
	}

	// SIGKILL the leader.
	nodes[leader].cmd.Process.Signal(syscall.SIGKILL)
	nodes[leader].cmd.Wait()
	// The killed node's data files must pass bbolt's consistency check.
	for _, name := range []string{"fsm.db", "raft-wal/wal-meta.db"} {
		if err := boltcheck.Check(filepath.Join(dir, leader, name), true); err != nil {
			t.Fatalf("%s of the SIGKILLed %s: %v", name, leader, err)
		}
	}
	var survivors []string
	for _, id := range ids {
		if id != leader {
			survivors = append(survivors, id)
		}
	}
	killedAt := time.Now()
	waitFor(t, "a new leader", 20*time.Second, func() bool {
		code, _, body, err := httpDo("GET", "http://"+apis[survivors[0]]+"/v1/cluster", "")
		var cl struct{ Leader string }
		json.Unmarshal([]byte(body), &cl)
		return err == nil && code == 200 && cl.Leader != "" && cl.Leader != leader
	})
	t.Logf("leader %s killed; new leader after %s", leader, time.Since(killedAt).Round(time.Millisecond))

	for _, id := range survivors {
		for i := 0; i < 30; i++ {
			code, _, body, err := httpDo("GET", fmt.Sprintf("http://%s/v1/kv/key-%d", apis[id], i), "")
			if err != nil || code != 200 || body != fmt.Sprint("value-", i) {
				t.Fatalf("after the kill, %s key-%d = %d %q %v", id, i, code, body, err)
			}
		}
	}
	// The token issued before the kill is consumed exactly once.
	consume := fmt.Sprintf(`{"scope":"pay","token":%q}`, tok.Token)
	if code, _, body, _ := httpDo("POST", "http://"+apis[survivors[0]]+"/v1/tokens/consume", consume, "Content-Type", "application/json"); code != 200 {
		t.Fatalf("consume after kill = %d %s", code, body)
	}
	if code, _, _, _ := httpDo("POST", "http://"+apis[survivors[1]]+"/v1/tokens/consume", consume, "Content-Type", "application/json"); code != 409 {
		t.Fatalf("second consume = %d, want 409", code)
	}
	// The survivors still accept writes.
	if code, _, body, _ := httpDo("PUT", "http://"+apis[survivors[1]]+"/v1/kv/after-kill?nx=1", "x"); code != 201 {
		t.Fatalf("write after kill = %d %s", code, body)
	}

	// SIGTERM: clean shutdown, exit 0.
	for _, id := range survivors {
		n := nodes[id]
		n.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- n.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s exited with %v after SIGTERM", id, err)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("%s did not stop within 15s of SIGTERM", id)
		}
	}
}

// TestE2EBadConfigExits2 checks the command line contract: a bad config or
// flag exits 2 with one line naming the field.
func TestE2EBadConfigExits2(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := idemgateBinary(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("nodes:\n  - {id: n1, raft: 127.0.0.1:1, api: 127.0.0.1:2, listen: 127.0.0.1:3}\nupstream: http://127.0.0.1:4\nroutes:\n  - name: pay\n    path: /pay\n    on_in_flight: hope\n"), 0o644)
	// Non-loopback Raft or API addresses without protection are refused.
	exposed := filepath.Join(dir, "exposed.yaml")
	os.WriteFile(exposed, []byte("nodes:\n  - {id: n1, raft: 10.9.9.9:7001, api: 127.0.0.1:2, listen: 0.0.0.0:3}\n"), 0o644)
	noTokens := filepath.Join(dir, "notokens.yaml")
	os.WriteFile(noTokens, []byte("nodes:\n  - {id: n1, raft: 127.0.0.1:1, api: 127.0.0.1:2, listen: 127.0.0.1:3}\ntls:\n  ca: ca.pem\n  cert: n1.pem\n  key: n1-key.pem\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--config", bad}, bad + ":7: routes[0].on_in_flight: "},
		{[]string{"serve", "--bogus"}, "-bogus"},
		{[]string{"serve", "--config", filepath.Join(dir, "missing.yaml")}, filepath.Join(dir, "missing.yaml") + ": no such file or directory"},
		{[]string{"serve", "--listen", "nope"}, "--listen"},
		{[]string{"serve", "--upstream", "ftp://x"}, "--upstream"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"serve", "--config", exposed}, "tls: node n1's raft address 10.9.9.9:7001 is not loopback"},
		{[]string{"serve", "--config", noTokens, "--api-listen", "0.0.0.0:9"}, "api.tokens: node n1's api address 0.0.0.0:9 is not loopback"},
		{[]string{"serve", "--config", noTokens}, noTokens + ":4: tls.ca: " + filepath.Join(dir, "ca.pem") + ": no such file"},
		{[]string{"certs"}, "--config"},
		{[]string{"token", "--role", "root"}, "--role"},
	} {
		cmd := exec.Command(bin, tc.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 {
			t.Fatalf("%v: exit %v, want 2", tc.args, err)
		}
		first := strings.SplitN(stderr.String(), "\n", 2)[0]
		if !strings.Contains(first, tc.want) {
			t.Fatalf("%v: first line %q, want it to name %q", tc.args, first, tc.want)
		}
	}
}

// TestE2EDamagedDataFileExits: a node whose fsm.db or log (raft-wal's meta
// file) is damaged exits 1 at once with one line naming the file, what is
// wrong and what to do; it does not crash, and does not crash again at
// the next start.
func TestE2EDamagedDataFileExits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := idemgateBinary(t)
	good := t.TempDir()
	ports := freePorts(t, 3)
	args := []string{"serve", "--data-dir", good, "--listen", ports[0], "--api-listen", ports[1], "--raft-listen", ports[2]}
	// A first run makes both files; SIGTERM closes them cleanly.
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := stdout.Read(make([]byte, 1)); err != nil { // the start line
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("first run: %v", err)
	}
	for _, tc := range []struct {
		file string
		want string
	}{
		{"fsm.db", "fsm.db is damaged (the file is "},
		{"raft-wal/wal-meta.db", "raft-wal/wal-meta.db is damaged: the file is "},
	} {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(good)); err != nil {
			t.Fatal(err)
		}
		if err := boltcheck.TruncateHalf(filepath.Join(dir, tc.file)); err != nil {
			t.Fatal(err)
		}
		for attempt := 1; attempt <= 2; attempt++ {
			cmd := exec.Command(bin, append(args[:2:2], append([]string{dir}, args[3:]...)...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 1 {
				t.Fatalf("%s truncated, run %d: exit %v, want 1; stderr:\n%s", tc.file, attempt, err, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			if want := "idemgate serve: " + filepath.Join(dir, tc.want); !strings.HasPrefix(last, want) || strings.Contains(stderr.String(), "panic") {
				t.Fatalf("%s truncated, run %d: stderr\n%s\nwant a last line starting %q, no panic", tc.file, attempt, stderr.String(), want)
			}
		}
	}
}
