package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestE2EGatewayProcesses runs three `idemgate serve` processes in front of a
// counting upstream: 200 keys sent 2-5 times at once to random nodes execute
// once each with byte-identical replays; tenants are separate; a form token
// raced by 32 clients reaches the upstream once; the leader SIGKILLed during
// traffic never causes a second execution.
func TestE2EGatewayProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := idemgateBinary(t)
	up := testsupport.Start(t)
	up.Delay.Store(int64(2 * time.Millisecond)) // a little work, like a bank call
	c := writeCluster(t, t.TempDir(), "http://"+up.Addr, `routes:
  - {name: pay, path: /pay, tenant: "header:X-User-Id"}
  - {name: form, path: /form, token: required}
`)
	ids, apis, gws := c.ids, c.apis, c.gws
	nodes := startNodes(t, bin, c.path, ids, apis)
	// Every node must know the leader: requests go to random nodes, and a
	// node that has known no leader for an election timeout answers 503.
	leader := waitClusterReady(t, c, ids)
	waitFor(t, "gateways", 10*time.Second, func() bool {
		for _, id := range ids {
			if _, _, _, err := httpDo("GET", "http://"+gws[id]+"/_idem/tokens", ""); err != nil {
				return false
			}
		}
		return true
	})

	// 200 keys, 2-5 copies each, at once, to random nodes.
	type answer struct {
		key, body string
		code      int
		replayed  bool
	}
	var mu sync.Mutex
	var answers []answer
	var wg sync.WaitGroup
	sem := make(chan struct{}, 48)
	for k := 0; k < 200; k++ {
		key := fmt.Sprint("e2e-", k)
		for c := 0; c < 2+rand.IntN(4); c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				code, hdr, body, err := httpDo("POST", "http://"+gws[ids[rand.IntN(3)]]+"/pay", `{"amount":5}`,
					"Idempotency-Key", key, "X-User-Id", "u1")
				if err != nil {
					t.Errorf("%s: %v", key, err)
					return
				}
				mu.Lock()
				answers = append(answers, answer{key, body, code, hdr.Get("Idempotent-Replayed") == "true"})
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	bodies := map[string]string{}
	for _, a := range answers {
		switch {
		case a.code == 201:
			if b, ok := bodies[a.key]; ok && b != a.body {
				t.Fatalf("%s: two different bodies %q and %q", a.key, b, a.body)
			}
			bodies[a.key] = a.body
		case a.code == 409:
		default:
			t.Fatalf("%s: answer %d %s", a.key, a.code, a.body)
		}
	}
	for k := 0; k < 200; k++ {
		key := fmt.Sprint("e2e-", k)
		if n := up.Executions(key); n != 1 {
			t.Fatalf("%s executed %d times", key, n)
		}
		code, hdr, body, _ := httpDo("POST", "http://"+gws[ids[k%3]]+"/pay", `{"amount":5}`, "Idempotency-Key", key, "X-User-Id", "u1")
		if code != 201 || hdr.Get("Idempotent-Replayed") != "true" || (bodies[key] != "" && body != bodies[key]) {
			t.Fatalf("%s retry = %d %q replayed=%q", key, code, body, hdr.Get("Idempotent-Replayed"))
		}
	}
	// Same key, another body: 422.
	if code, _, body, _ := httpDo("POST", "http://"+gws["n3"]+"/pay", `{"amount":6}`, "Idempotency-Key", "e2e-0", "X-User-Id", "u1"); code != 422 || !strings.Contains(body, "key-reuse") {
		t.Fatalf("other body = %d %s", code, body)
	}
	// A slow upstream and a concurrent duplicate on another node: 409.
	slow := make(chan int, 1)
	go func() {
		code, _, _, _ := httpDo("POST", "http://"+gws["n1"]+"/pay", "s", "Idempotency-Key", "slow", "X-Delay", "800ms")
		slow <- code
	}()
	time.Sleep(300 * time.Millisecond)
	if code, hdr, body, _ := httpDo("POST", "http://"+gws["n2"]+"/pay", "s", "Idempotency-Key", "slow", "X-Delay", "800ms"); code != 409 || hdr.Get("Retry-After") == "" || !strings.Contains(body, "in-progress") {
		t.Fatalf("concurrent duplicate = %d %s", code, body)
	}
	if code := <-slow; code != 201 || up.Executions("slow") != 1 {
		t.Fatalf("slow first = %d, executions %d", code, up.Executions("slow"))
	}
	// Same key, other tenant: a second execution.
	if code, _, body, _ := httpDo("POST", "http://"+gws["n2"]+"/pay", `{"amount":5}`, "Idempotency-Key", "e2e-0", "X-User-Id", "u2"); code != 201 || !strings.Contains(body, `"user":"u2"`) {
		t.Fatalf("other tenant = %d %s", code, body)
	}
	// One token, 32 racing clients on all nodes: one reaches the upstream.
	_, _, body, _ := httpDo("POST", "http://"+gws["n3"]+"/_idem/tokens?scope=form", "")
	var tok struct{ Token string }
	json.Unmarshal([]byte(body), &tok)
	before := up.Calls.Load()
	var wins atomic.Int32
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			code, _, _, _ := httpDo("POST", "http://"+gws[ids[i%3]]+"/form", "x", "Idempotency-Key", fmt.Sprint("tok-", i), "Form-Token", tok.Token)
			if code == 201 {
				wins.Add(1)
			}
		}(i)
	}
	wg.Wait()
	if wins.Load() != 1 || up.Calls.Load()-before != 1 {
		t.Fatalf("token race: %d wins, %d upstream calls", wins.Load(), up.Calls.Load()-before)
	}

	// Traffic while the leader is SIGKILLed; every request sent twice.
	done := map[string]bool{}
	stopAt := time.Now().Add(3 * time.Second)
	for w := 0; w < 12; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(stopAt); i++ {
				key := fmt.Sprintf("kill-%d-%d", w, i)
				for attempt := 0; attempt < 2; attempt++ {
					code, _, _, err := httpDo("POST", "http://"+gws[ids[(w+i+attempt)%3]]+"/pay", "x", "Idempotency-Key", key)
					if err == nil && code == 201 {
						mu.Lock()
						done[key] = true
						mu.Unlock()
					}
				}
			}
		}(w)
	}
	time.Sleep(time.Second)
	nodes[leader].cmd.Process.Signal(syscall.SIGKILL)
	nodes[leader].cmd.Wait()
	wg.Wait()
	var alive string
	for _, id := range ids {
		if id != leader {
			alive = id
		}
	}
	for key, n := range up.ByKey() {
		if n > 1 && strings.HasPrefix(key, "kill-") {
			t.Fatalf("%s executed %d times across the leader kill", key, n)
		}
	}
	for key := range done {
		code, hdr, _, err := httpDo("POST", "http://"+gws[alive]+"/pay", "x", "Idempotency-Key", key)
		if err != nil || code != 201 || hdr.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%s after the kill = %d %v", key, code, err)
		}
	}
	t.Logf("leader %s killed during traffic; %d keys completed, none executed twice", leader, len(done))
}
