package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestE2EStoreOnlyCluster runs three real `idemgate serve` processes from a
// file with no upstream and no routes, from a working directory other than
// the file's: each serves the API (KV through Raft) and no gateway, says so
// in its start-up line, keeps its data beside the file (data_dir is
// relative to it), and warns that the listen one node has is ignored.
func TestE2EStoreOnlyCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := idemgateBinary(t)
	dir := t.TempDir()
	etc, work := filepath.Join(dir, "etc"), filepath.Join(dir, "work")
	for _, d := range []string{etc, work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ports := freePorts(t, 7)
	ids := []string{"n1", "n2", "n3"}
	apis := map[string]string{}
	var cfg strings.Builder
	cfg.WriteString("nodes:\n")
	for i, id := range ids {
		apis[id] = ports[2*i]
		listen := ""
		if id == "n1" {
			listen = fmt.Sprintf(", listen: %q", ports[6])
		}
		fmt.Fprintf(&cfg, "  - {id: %s, raft: %q, api: %q%s}\n", id, ports[2*i+1], apis[id], listen)
	}
	cfg.WriteString("data_dir: data/{id}\nraft: {heartbeat_timeout: 500ms, election_timeout: 500ms}\n")
	if err := os.WriteFile(filepath.Join(etc, "cluster.yaml"), []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	lines := map[string]chan string{}
	logs := map[string]*testsupport.Buffer{}
	for _, id := range ids {
		cmd := exec.Command(bin, "serve", "--config", "../etc/cluster.yaml", "--node", id, "--log-level", "warn", "--bootstrap")
		cmd.Dir = work
		logs[id] = &testsupport.Buffer{}
		cmd.Stderr = logs[id]
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines[id] = make(chan string, 1)
		go func(out *bufio.Scanner, first chan<- string) {
			if out.Scan() {
				first <- out.Text()
			}
			close(first)
			for out.Scan() { // keep draining: a full pipe would block the node
			}
		}(bufio.NewScanner(out), lines[id])
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			if t.Failed() {
				t.Logf("--- %s stderr:\n%s", id, logs[id])
			}
		})
	}
	for _, id := range ids {
		var line string
		select {
		case line = <-lines[id]:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s printed no start-up line in 20s", id)
		}
		if !strings.Contains(line, "node "+id+", gateway off (no upstream: store only), api http://"+apis[id]) {
			t.Fatalf("%s start-up line = %q, want the gateway off and the API", id, line)
		}
		if want := filepath.Join(etc, "data", id); !strings.HasSuffix(line, "data "+want) {
			t.Fatalf("%s start-up line = %q, want data %s (beside the file)", id, line, want)
		}
	}
	waitFor(t, "n1's warning that listen is ignored", 10*time.Second, func() bool {
		return strings.Contains(logs["n1"].String(), "listen is ignored")
	})
	if c, err := net.DialTimeout("tcp", ports[6], time.Second); err == nil {
		c.Close()
		t.Fatalf("something listens on n1's listen address %s: the gateway should be off", ports[6])
	}

	waitFor(t, "a write through every node's API", 20*time.Second, func() bool {
		code, _, _, err := httpDo("PUT", "http://"+apis["n1"]+"/v1/kv/ready?nx=1", "1")
		return err == nil && (code == 201 || code == 409)
	})
	for i, id := range ids {
		code, _, body, err := httpDo("PUT", fmt.Sprintf("http://%s/v1/kv/k%d?nx=1", apis[id], i), fmt.Sprint("v", i))
		if err != nil || code != 201 {
			t.Fatalf("SETNX k%d via %s = %d %s %v", i, id, code, body, err)
		}
	}
	for i := range ids {
		for _, id := range ids {
			code, _, body, err := httpDo("GET", fmt.Sprintf("http://%s/v1/kv/k%d", apis[id], i), "")
			if err != nil || code != 200 || body != fmt.Sprint("v", i) {
				t.Fatalf("GET k%d via %s = %d %q %v", i, id, code, body, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(work, "data")); !os.IsNotExist(err) {
		t.Fatalf("a data directory in the working directory (%v): data_dir must be relative to the file", err)
	}
}
