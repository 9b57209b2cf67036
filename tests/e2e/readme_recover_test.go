package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// readmeRecoverPrologue brings the walk-through's cluster to where the
// recover procedure of docs/operations.md starts: a payment and a SETNX acknowledged, then n2 and
// n3 lost for good (killed; their data goes when the procedure wipes it)
// and the survivor n1 stopped.
var readmeRecoverPrologue = []string{
	`go build -o idemgate .`,
	`go run ./examples/payments &`,
	`for n in n1 n2 n3; do ./idemgate serve --config cluster.example.yaml --node $n --bootstrap & eval "pid_$n=$!"; done`,
	`until curl -sf 127.0.0.1:3000/charges >/dev/null; do sleep 0.2; done`,
	`for p in 9001 9002 9003; do until curl -sf 127.0.0.1:$p/readyz >/dev/null; do sleep 0.2; done; done`,
	`curl -i -X POST 127.0.0.1:8001/pay -H 'Idempotency-Key: order-42' -H 'X-User-Id: alice' -d '{"amount":100}'   # 201`,
	`curl -i -X PUT '127.0.0.1:9002/v1/kv/order-43?nx=1' --data-binary 'charged'   # 201`,
	`kill -9 $pid_n2 $pid_n3; wait $pid_n2 $pid_n3 || true`,
	`kill $pid_n1; wait $pid_n1 || true`,
}

// readmeRecoverEpilogue waits (bounded) for the added nodes to be ready.
var readmeRecoverEpilogue = []string{
	`for p in 9002 9003; do for i in $(seq 300); do curl -sf 127.0.0.1:$p/readyz >/dev/null && break; sleep 0.2; done; done`,
}

// TestREADMERecover runs the "a quorum lost for good" procedure of
// docs/operations.md as printed on the walk-through's cluster after n2 and n3 were lost: the
// wiped nodes are started at the same moment, before they are added. The
// result must be one cluster of three, holding every acknowledged write
// once: the old payment is replayed, not charged again, on any node; the
// old SETNX key still exists.
func TestREADMERecover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	readmeTools(t)
	blocks := loadReadmeBlocks(t)
	var procedure *readmeBlock
	for i := range blocks {
		if blocks[i].scenario == "recover" {
			procedure = &blocks[i]
		}
	}
	if procedure == nil {
		t.Fatal(`neither README nor docs/ has a block marked <!-- readme-test: scenario: recover: … -->`)
	}
	run := *procedure
	run.skip = ""
	script, checks, lineOf, ran := readmeScript([]readmeBlock{
		{line: 0, lines: readmeRecoverPrologue}, run, {line: 0, lines: readmeRecoverEpilogue}})
	skipUnlessFree(t, readmeAddrs(strings.Join(run.lines, "\n"), "127.0.0.1:3000 127.0.0.1:8001 127.0.0.1:8002 127.0.0.1:8003 127.0.0.1:7001 127.0.0.1:7002 127.0.0.1:7003 127.0.0.1:9001 127.0.0.1:9002 127.0.0.1:9003"))
	runReadme(t, script, checks, lineOf, ran, func() { checkRecovered(t) })
}

// checkRecovered checks the walk-through's cluster after the procedure.
func checkRecovered(t *testing.T) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	type cluster struct {
		Leader    string `json:"leader"`
		ClusterID string `json:"cluster_id"`
		Nodes     []struct {
			ID    string `json:"id"`
			Voter bool   `json:"voter"`
		} `json:"nodes"`
	}
	var first cluster
	for i, api := range []string{"127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"} {
		var c cluster
		if err := getJSON(client, "http://"+api+"/v1/cluster", &c); err != nil {
			t.Fatalf("%s/v1/cluster: %v", api, err)
		}
		voters := 0
		for _, n := range c.Nodes {
			if n.Voter {
				voters++
			}
		}
		if c.Leader == "" || c.ClusterID == "" || voters != 3 {
			t.Errorf("%s/v1/cluster: leader %q, cluster %q, %d voters; want a leader, an id and 3 voters", api, c.Leader, c.ClusterID, voters)
		}
		if i == 0 {
			first = c
		} else if c.Leader != first.Leader || c.ClusterID != first.ClusterID {
			t.Errorf("two clusters: %s says leader %s of %s, 127.0.0.1:9001 says %s of %s", api, c.Leader, c.ClusterID, first.Leader, first.ClusterID)
		}
	}
	// The payment made before the loss, retried on every node: replayed.
	for _, gw := range []string{"127.0.0.1:8001", "127.0.0.1:8002", "127.0.0.1:8003"} {
		req, _ := http.NewRequest("POST", "http://"+gw+"/pay", strings.NewReader(`{"amount":100}`))
		req.Header.Set("Idempotency-Key", "order-42")
		req.Header.Set("X-User-Id", "alice")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("retry through %s: %v", gw, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get("Idempotency-Status"); resp.StatusCode != 201 || got != "replayed" {
			t.Errorf("order-42 retried through %s: %d, Idempotency-Status %q; want 201 replayed", gw, resp.StatusCode, got)
		}
	}
	var charges map[string]int
	if err := getJSON(client, "http://127.0.0.1:3000/charges", &charges); err != nil {
		t.Fatal(err)
	}
	if charges["alice"] != 1 {
		t.Errorf("alice was charged %d times, want once: %v", charges["alice"], charges)
	}
	for _, api := range []string{"127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"} {
		req, _ := http.NewRequest("PUT", "http://"+api+"/v1/kv/order-43?nx=1", strings.NewReader("again"))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 409 || string(body) != "charged" {
			t.Errorf("SETNX order-43 on %s: %d %q; want 409 \"charged\" (the key set before the loss)", api, resp.StatusCode, body)
		}
	}
}

func getJSON(c *http.Client, url string, v any) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}
