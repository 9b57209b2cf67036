package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// respCall sends one command on a new connection to a node's Redis port
// and returns its reply line (a simple reply or an error: what this test
// expects), within timeout.
func respCall(addr string, timeout time.Duration, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// TestE2ENoQuorumAnswersAtOnce: three `idemgate serve` processes with a
// one-minute apply timeout; two are killed. On the survivor every write and
// linearizable read, through the gateway, the API and the Redis port,
// answers "no leader" (503 with Retry-After, or CLUSTERDOWN) within the
// clients' 10 s: from knowing no leader, not from the apply timeout; and
// the gateway sends nothing to the upstream.
func TestE2ENoQuorumAnswersAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := idemgateBinary(t)
	up := testsupport.Start(t)
	c := writeCluster(t, t.TempDir(), "http://"+up.Addr, "routes:\n  - {name: pay, path: /pay}\n  - {name: form, path: /form, token: required}\n")
	// A Redis port per node, and one minute to apply.
	resps := addRespPorts(t, c)
	b, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b)
	const raftLine = "election_timeout: 500ms}"
	if strings.Count(cfg, raftLine) != 1 {
		t.Fatalf("the cluster file has no %q:\n%s", raftLine, cfg)
	}
	cfg = strings.Replace(cfg, raftLine, "election_timeout: 500ms, apply_timeout: 60s}", 1)
	if err := os.WriteFile(c.path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	nodes := startNodes(t, bin, c.path, c.ids, c.apis)
	leader := waitClusterReady(t, c, c.ids)
	if code, _, body, err := httpDo("POST", "http://"+c.gws[leader]+"/pay", `{"amount":1}`, "Idempotency-Key", "before"); err != nil || code != 201 {
		t.Fatalf("a payment with a quorum = %d %s %v", code, body, err)
	}

	// The survivor is the leader: it must first find it lost its quorum.
	for _, id := range c.ids {
		if id != leader {
			nodes[id].cmd.Process.Signal(syscall.SIGKILL)
			nodes[id].cmd.Wait()
		}
	}
	gw, api, resp := "http://"+c.gws[leader], "http://"+c.apis[leader], resps[leader]
	httpCases := []struct {
		name, method, url, body string
		hdr                     []string
	}{
		{"gateway payment", "POST", gw + "/pay", `{"amount":1}`, []string{"Idempotency-Key", "no-quorum"}},
		{"gateway form token", "POST", gw + "/_idem/tokens?scope=form", "", nil},
		{"API write", "PUT", api + "/v1/kv/k", "v", nil},
		{"API SETNX", "PUT", api + "/v1/kv/k?nx=1", "v", nil},
		{"API linearizable read", "GET", api + "/v1/kv/before", "", nil},
		{"API token issue", "POST", api + "/v1/tokens", `{"scope":"pay"}`, []string{"Content-Type", "application/json"}},
	}
	for round := 1; round <= 2; round++ { // the second: once the node has long known no leader
		for _, tc := range httpCases {
			code, hdr, body, err := httpDo(tc.method, tc.url, tc.body, tc.hdr...)
			var p httpx.Problem
			json.Unmarshal([]byte(body), &p)
			if err != nil || code != 503 || hdr.Get("Retry-After") == "" || !strings.HasSuffix(p.Type, "/unavailable") ||
				!strings.Contains(p.Detail, "no raft leader") {
				t.Errorf("round %d: %s without a quorum = %d %s (Retry-After %q) %v; want 503 unavailable, no raft leader, within the client's 10 s",
					round, tc.name, code, body, hdr.Get("Retry-After"), err)
			}
		}
		for _, cmd := range [][]string{{"SET", "k", "v"}, {"SET", "k", "v", "NX"}, {"GET", "before"}, {"INCR", "n"}} {
			got, err := respCall(resp, 10*time.Second, cmd...)
			if err != nil || !strings.HasPrefix(got, "-CLUSTERDOWN no leader") {
				t.Errorf("round %d: RESP %v without a quorum = %q %v; want CLUSTERDOWN no leader within 10 s", round, cmd, got, err)
			}
		}
	}
	if n := up.Executions("no-quorum"); n != 0 {
		t.Errorf("a payment without a quorum reached the upstream %d times", n)
	}
	if readyz(c.apis[leader]) != 503 {
		t.Error("the survivor's readyz is not 503")
	}
}
