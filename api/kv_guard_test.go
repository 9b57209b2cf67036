package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAPIValueGuard: PUT with If-Value is the state-transition guard: it
// sets only while the key holds that value, from any node, never creates
// the key, and refuses to be combined with the other conditions.
func TestAPIValueGuard(t *testing.T) {
	t.Parallel()
	ac := startAPICluster(t, 3) // real Raft: the guard holds across nodes
	u := ac.urls
	steps := []struct {
		method, url, body string
		hdr               []string
		status            int
		problem           string
	}{
		{"PUT", u[0] + "/v1/kv/order-42", "PAID", []string{"If-Value", "PROCESSING"}, 412, "value-mismatch"},
		{"GET", u[0] + "/v1/kv/order-42", "", nil, 404, "not-found"},
		{"PUT", u[1] + "/v1/kv/order-42", "PROCESSING", nil, 200, ""},
		{"PUT", u[2] + "/v1/kv/order-42", "PAID", []string{"If-Value", "PENDING"}, 412, "value-mismatch"},
		{"PUT", u[0] + "/v1/kv/order-42", "PAID", []string{"If-Value", "PROCESSING"}, 200, ""},
		{"PUT", u[1] + "/v1/kv/order-42", "REFUNDED", []string{"If-Value", "PROCESSING"}, 412, "value-mismatch"},
		{"PUT", u[1] + "/v1/kv/order-42?nx=1", "x", []string{"If-Value", "PAID"}, 400, "bad-request"},
		{"PUT", u[1] + "/v1/kv/order-42", "x", []string{"If-Value", "PAID", "If-Match", `"1"`}, 400, "bad-request"},
		{"PUT", u[1] + "/v1/kv/order-42", "x", []string{"If-Value", "PAID", "If-None-Match", "*"}, 400, "bad-request"},
		{"PUT", u[2] + "/v1/kv/order-42", strings.Repeat("v", 4096), []string{"If-Value", strings.Repeat("w", 4096)}, 412, "value-mismatch"},
	}
	for i, s := range steps {
		r := do(t, s.method, s.url, s.body, s.hdr...)
		if r.Status != s.status || (s.problem != "" && r.ProblemType(t) != s.problem) {
			t.Fatalf("step %d %s %s %v = %d %s, want %d %s", i, s.method, s.url, s.hdr, r.Status, r.Body, s.status, s.problem)
		}
	}
	if r := do(t, "GET", u[2]+"/v1/kv/order-42", ""); r.Body != "PAID" {
		t.Fatalf("the order after the guarded transitions = %q, want PAID", r.Body)
	}
	// Racing transitions from one state: exactly one wins.
	do(t, "PUT", u[0]+"/v1/kv/order-43", "PROCESSING")
	var wg sync.WaitGroup
	wins := make(chan string, 12)
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			to := fmt.Sprint("STATE-", i)
			if r := do(t, "PUT", u[i%3]+"/v1/kv/order-43", to, "If-Value", "PROCESSING"); r.Status == 200 {
				wins <- to
			} else if r.Status != 412 {
				t.Errorf("racing transition: %d %s", r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	close(wins)
	var won []string
	for w := range wins {
		won = append(won, w)
	}
	if len(won) != 1 {
		t.Fatalf("%d transitions from PROCESSING won: %v", len(won), won)
	}
	if r := do(t, "GET", u[1]+"/v1/kv/order-43", ""); r.Body != won[0] {
		t.Fatalf("the order is %q, the winner set %q", r.Body, won[0])
	}
}

// TestAPIGuardedCounter: POST /v1/kv/{key} adds within [min, max]; a
// refusal changes nothing; concurrent withdrawals never take the balance
// below min; bad bodies are refused with one line naming the problem.
func TestAPIGuardedCounter(t *testing.T) {
	t.Parallel()
	ac := startAPICluster(t, 3) // real Raft: the guard holds across nodes
	u := ac.urls
	value := func(body string) int64 {
		t.Helper()
		var a struct{ Value int64 }
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			t.Fatalf("answer %q: %v", body, err)
		}
		return a.Value
	}
	steps := []struct {
		url, body string
		hdr       []string
		status    int
		problem   string
		value     int64
	}{
		{u[0] + "/v1/kv/balance", `{"by":-100,"min":0}`, nil, 409, "out-of-range", 0},
		{u[1] + "/v1/kv/balance", `{"by":250}`, nil, 200, "", 250},
		{u[2] + "/v1/kv/balance", `{}`, nil, 200, "", 251},
		{u[0] + "/v1/kv/balance", `{"by":1,"max":251}`, nil, 409, "out-of-range", 0},
		{u[0] + "/v1/kv/balance", `{"by":-251,"min":0,"max":0}`, nil, 200, "", 0},
		{u[0] + "/v1/kv/balance", `{"by":1,"min":5,"max":4}`, nil, 400, "bad-request", 0},
		{u[0] + "/v1/kv/balance", `{"by":"1"}`, nil, 400, "invalid-json", 0},
		{u[0] + "/v1/kv/balance", `{"by":1.5}`, nil, 400, "invalid-json", 0},
		{u[0] + "/v1/kv/balance", `{"by":1,"limit":3}`, nil, 400, "invalid-json", 0},
		{u[0] + "/v1/kv/balance", `{"by":1}{"by":1}`, nil, 400, "invalid-json", 0},
		{u[0] + "/v1/kv/balance", `{"by":99999999999999999999}`, nil, 400, "invalid-json", 0},
		{u[0] + "/v1/kv/balance", `not json`, nil, 400, "invalid-json", 0},
		{u[0] + "/v1/kv/balance", `{"by":9223372036854775807}`, nil, 200, "", 9223372036854775807},
		{u[0] + "/v1/kv/balance", `{"by":1}`, nil, 409, "out-of-range", 0},
		{u[0] + "/v1/kv/balance", `{"by":1}`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported-media-type", 0},
	}
	for i, s := range steps {
		hdr := s.hdr
		if hdr == nil {
			hdr = []string{"Content-Type", "application/json"}
		}
		r := do(t, "POST", s.url, s.body, hdr...)
		if r.Status != s.status || (s.problem != "" && r.ProblemType(t) != s.problem) {
			t.Fatalf("step %d POST %s = %d %s, want %d %s", i, s.body, r.Status, r.Body, s.status, s.problem)
		}
		if s.status == 200 && value(r.Body) != s.value {
			t.Fatalf("step %d POST %s = %s, want value %d", i, s.body, r.Body, s.value)
		}
	}
	do(t, "PUT", u[0]+"/v1/kv/word", "hello")
	if r := do(t, "POST", u[1]+"/v1/kv/word", `{"by":1}`, "Content-Type", "application/json"); r.Status != 409 || r.ProblemType(t) != "not-integer" {
		t.Fatalf("increment of a word = %d %s", r.Status, r.Body)
	}
	// 30 withdrawals of 100 race a balance of 1000: ten succeed, the
	// balance ends at 0, never below.
	do(t, "PUT", u[0]+"/v1/kv/wallet", "1000")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := do(t, "POST", u[i%3]+"/v1/kv/wallet", `{"by":-100,"min":0}`, "Content-Type", "application/json")
			mu.Lock()
			defer mu.Unlock()
			switch r.Status {
			case 200:
				ok++
			case 409:
				refused++
			default:
				t.Errorf("withdrawal: %d %s", r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	// The balance, read again while a loaded machine elects (503): the
	// question is what it holds, not how soon the cluster answers.
	r := do(t, "GET", u[2]+"/v1/kv/wallet", "")
	for deadline := time.Now().Add(30 * time.Second); r.Status == 503 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		r = do(t, "GET", u[2]+"/v1/kv/wallet", "")
	}
	if ok != 10 || refused != 20 || r.Body != "0" {
		t.Fatalf("%d withdrawals went through, %d refused, balance %q; want 10, 20, 0", ok, refused, r.Body)
	}
}
