package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/internal/localcluster"
)

// TestAmortisedCommitsSurviveSIGKILL: three `idemgate serve` processes
// whose state machines keep their transaction open across batches (a
// commit only when a read, a snapshot or a stop needs one), SIGKILLed at
// random moments under writes: SETNX of fresh keys and increments of a
// counter per writer, each retried with its Idempotency-Key until it is
// answered. n3 is never killed. After each kill the file the crash left
// holds the state at its applied index; after the run every acknowledged
// key is present on every node, every counter equals the increments its
// writer had acknowledged (a request applied twice would raise it), and
// the killed nodes' state hashes equal n3's.
func TestAmortisedCommitsSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := idemgateBinary(t)
	dir := t.TempDir()
	ids := []string{"n1", "n2", "n3"}
	ports := freePorts(t, 9)
	apis := map[string]string{}
	var cfg strings.Builder
	cfg.WriteString("nodes:\n")
	for i, id := range ids {
		apis[id] = ports[3*i]
		fmt.Fprintf(&cfg, "  - {id: %s, raft: %s, api: %s, listen: %s}\n", id, ports[3*i+2], ports[3*i], ports[3*i+1])
	}
	fmt.Fprintf(&cfg, "data_dir: %s/{id}\nupstream: http://127.0.0.1:1\n"+
		"raft: {heartbeat_timeout: 500ms, election_timeout: 500ms, snapshot_threshold: 1024, apply_commit_every: 1000000, apply_commit_interval: 1m}\n", dir)
	cfgPath := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	nodes := startNodes(t, bin, cfgPath, ids, apis)
	waitFor(t, "a leader", 30*time.Second, func() bool { return amortLeader(apis) != "" })

	// Writers: each op is retried, to any node, with its key until it is
	// answered; a writer stops only between ops.
	const writers = 4
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[string]bool{} // SETNX keys answered 201
	incrs := make([]int, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("k-%d-%d", w, i)
				if amortRetry(t, apis, ids, "PUT", "/v1/kv/"+key+"?nx=1", "v", "s-"+key, 201) {
					mu.Lock()
					acked[key] = true
					mu.Unlock()
				}
				if amortRetry(t, apis, ids, "POST", fmt.Sprintf("/v1/kv/ctr-%d", w), `{"by":1}`, "c-"+key, 200) {
					mu.Lock()
					incrs[w]++
					mu.Unlock()
				}
			}
		}()
	}

	lost := 0 // kills that found a transaction open
	for round := range 5 {
		time.Sleep(time.Duration(500+rand.IntN(1500)) * time.Millisecond)
		victim := ids[rand.IntN(2)]
		before := amortApplied(apis[victim])
		n := nodes[victim]
		n.cmd.Process.Signal(syscall.SIGKILL)
		n.cmd.Wait()
		durable := crashedApplied(t, filepath.Join(dir, victim))
		if durable < before {
			lost++
		}
		t.Logf("round %d: SIGKILL %s: applied %d before, the file holds %d", round, victim, before, durable)
		nodes[victim] = startNode(t, bin, cfgPath, victim, apis[victim])
		waitFor(t, victim+" ready again", 60*time.Second, func() bool {
			code, _, _, err := httpDo("GET", "http://"+apis[victim]+"/readyz", "")
			return err == nil && code == 200
		})
	}
	close(stop)
	wg.Wait()
	if lost == 0 {
		t.Error("no kill found a transaction open: the test did not exercise the replay")
	}

	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		for key := range acked {
			if code, _, _, err := httpDo("GET", "http://"+apis[id]+"/v1/kv/"+key, ""); err != nil || code != 200 {
				t.Errorf("%s: acknowledged key %s: %d, %v", id, key, code, err)
			}
		}
		for w, want := range incrs {
			_, _, body, err := httpDo("GET", fmt.Sprintf("http://%s/v1/kv/ctr-%d", apis[id], w), "")
			if want > 0 && (err != nil || strings.TrimSpace(body) != fmt.Sprint(want)) {
				t.Errorf("%s: counter %d = %q, %v; want %d (each acknowledged increment once)", id, w, body, err, want)
			}
		}
	}
	waitFor(t, "equal applied indexes", 30*time.Second, func() bool {
		a, b, c := amortApplied(apis["n1"]), amortApplied(apis["n2"]), amortApplied(apis["n3"])
		return a == b && b == c && a > 0
	})
	for _, id := range ids {
		nodes[id].cmd.Process.Signal(syscall.SIGTERM)
		nodes[id].cmd.Wait()
	}
	var hashes [3][32]byte
	for i, id := range ids {
		f, err := fsm.Open(fsm.Config{Path: filepath.Join(dir, id, "fsm.db"), NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		hashes[i], err = localcluster.StateHash(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if hashes[0] != hashes[2] || hashes[1] != hashes[2] {
		t.Errorf("state hashes n1 %x, n2 %x, n3 (never killed) %x: want equal", hashes[0][:8], hashes[1][:8], hashes[2][:8])
	}
	t.Logf("%d keys and %v increments acknowledged; %d of 5 kills found a transaction open", len(acked), incrs, lost)
}

// amortRetry sends a write until a node answers it with want (true) or
// another final answer (false), rotating over the nodes, for at most 60 s.
func amortRetry(t *testing.T, apis map[string]string, ids []string, method, path, body, key string, want int) bool {
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		code, _, _, err := httpDo(method, "http://"+apis[ids[i%len(ids)]]+path, body, "Idempotency-Key", key)
		switch {
		case err == nil && code == want:
			return true
		case err == nil && code < 500 && code != 429:
			t.Errorf("%s %s: %d, want %d", method, path, code, want)
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("%s %s: no answer in 60 s", method, path)
	return false
}

// amortLeader is the leader's id as a node reports it, or "".
func amortLeader(apis map[string]string) string {
	for _, api := range apis {
		if _, _, body, err := httpDo("GET", "http://"+api+"/v1/cluster", ""); err == nil {
			var cl struct{ Leader string }
			if json.Unmarshal([]byte(body), &cl) == nil && cl.Leader != "" {
				return cl.Leader
			}
		}
	}
	return ""
}

// amortApplied is the applied index a node reports (0 when it does not
// answer).
func amortApplied(api string) uint64 {
	_, _, body, err := httpDo("GET", "http://"+api+"/v1/cluster", "")
	var cl struct {
		AppliedIndex uint64 `json:"applied_index"`
	}
	if err != nil || json.Unmarshal([]byte(body), &cl) != nil {
		return 0
	}
	return cl.AppliedIndex
}

// crashedApplied opens a copy of the state machine file a killed node
// left (with its boot marker: a crash of the process) and returns the
// applied index it holds; the node's own files are left as the crash
// left them.
func crashedApplied(t *testing.T, nodeDir string) uint64 {
	t.Helper()
	cp := t.TempDir()
	for _, name := range []string{"fsm.db", "fsm.db.boot"} {
		data, err := os.ReadFile(filepath.Join(nodeDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cp, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := fsm.Open(fsm.Config{Path: filepath.Join(cp, "fsm.db"), NoSync: true})
	if err != nil {
		t.Fatalf("the file a SIGKILL left does not open: %v", err)
	}
	defer f.Close()
	return f.AppliedIndex()
}
