package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// acquireLock posts an acquire and decodes a 201's answer.
func acquireLock(t testing.TB, base, name, query string) (reply, lockAnswer) {
	t.Helper()
	r := do(t, "POST", base+"/v1/locks/"+name+query, "")
	var ans lockAnswer
	if r.Status == 201 {
		if err := json.Unmarshal([]byte(r.Body), &ans); err != nil {
			t.Fatalf("acquire answer %s: %v", r.Body, err)
		}
	}
	return r, ans
}

// lockWaiters reads GET /v1/locks/{name}: its waiters, -1 when free.
func lockWaiters(t testing.TB, base, name string) int {
	t.Helper()
	r := do(t, "GET", base+"/v1/locks/"+name, "")
	switch r.Status {
	case 404:
		return -1
	case 200:
		var st lockState
		if err := json.Unmarshal([]byte(r.Body), &st); err != nil || !st.Held {
			t.Fatalf("lock state %s: %v", r.Body, err)
		}
		return int(st.Waiters)
	}
	t.Fatalf("GET lock: %d %s", r.Status, r.Body)
	return 0
}

// untilWaiters waits, bounded by count, until name has want waiters (-1:
// until it is free).
func untilWaiters(t testing.TB, base, name string, want int) {
	t.Helper()
	got := 0
	for i := 0; i < 2000; i++ {
		if got = lockWaiters(t, base, name); got == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("lock %s has %d waiters, want %d", name, got, want)
}

// TestLockFairness queues waiters in a known order (each one's place
// checked before the next is sent) behind a holder, on both listeners of
// one store, and releases: each is granted in queue order, woken by the
// release before it, with a fence higher than the one before. It reports
// the longest wait.
func TestLockFairness(t *testing.T) {
	t.Parallel()
	ac := startAPIs(t, 2, nil)
	const n = 8
	r, holder := acquireLock(t, ac.urls[0], "fair", "?ttl=1m")
	if r.Status != 201 || holder.Fence == 0 {
		t.Fatalf("holder: %d %s", r.Status, r.Body)
	}
	type grant struct {
		who    int
		fence  uint64
		waited int64
	}
	var (
		mu    sync.Mutex
		order []grant
		wg    sync.WaitGroup
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, ans := acquireLock(t, ac.urls[i%2], "fair", "?ttl=1m&wait=2m")
			if r.Status != 201 {
				t.Errorf("waiter %d: %d %s", i, r.Status, r.Body)
				return
			}
			mu.Lock()
			order = append(order, grant{i, ans.Fence, *ans.WaitedMS})
			mu.Unlock()
			if r := do(t, "DELETE", fmt.Sprintf("%s/v1/locks/fair?fence=%d", ac.urls[(i+1)%2], ans.Fence), ""); r.Status != 200 {
				t.Errorf("waiter %d's release: %d %s", i, r.Status, r.Body)
			}
		}(i)
		untilWaiters(t, ac.urls[0], "fair", i+1)
	}
	if r := do(t, "DELETE", fmt.Sprintf("%s/v1/locks/fair?fence=%d", ac.urls[1], holder.Fence), ""); r.Status != 200 {
		t.Fatalf("holder's release: %d %s", r.Status, r.Body)
	}
	wg.Wait()
	if len(order) != n {
		t.Fatalf("%d of %d waiters granted", len(order), n)
	}
	prev, maxWait := holder.Fence, int64(0)
	for pos, g := range order {
		if g.who != pos || g.fence <= prev {
			t.Fatalf("grants in order %+v: position %d went to waiter %d with fence %d after %d", order, pos, g.who, g.fence, prev)
		}
		prev, maxWait = g.fence, max(maxWait, g.waited)
	}
	t.Logf("%d waiters granted in FIFO order; the longest waited %d ms", n, maxWait)
	untilWaiters(t, ac.urls[0], "fair", -1)
}

// TestLockHostile: the lock API against hostile callers: wrong and old
// fences, a renew after expiry, zero, negative and huge durations, bad
// names and fences, a held lock without a wait; each gets its exact
// answer and the holder keeps the lock.
func TestLockHostile(t *testing.T) {
	t.Parallel()
	ac := startAPIs(t, 1, nil)
	u := ac.urls[0]
	r, short := acquireLock(t, u, "short", "?ttl=50ms")
	if r.Status != 201 {
		t.Fatalf("acquire: %d %s", r.Status, r.Body)
	}
	untilWaiters(t, u, "short", -1) // its lease runs out
	r, held := acquireLock(t, u, "held", "?ttl=1h")
	if r.Status != 201 || held.ExpiresAt == "" {
		t.Fatalf("acquire: %d %s", r.Status, r.Body)
	}
	r, again := acquireLock(t, u, "short", "?ttl=1h")
	if r.Status != 201 || again.Fence <= short.Fence {
		t.Fatalf("acquire after expiry: %d %s, want a fence over %d", r.Status, r.Body, short.Fence)
	}
	long := strings.Repeat("n", 257)
	for _, c := range []onceCall{
		// A paused holder wakes after its lease ran out and another took it.
		{"POST", "/v1/locks/short/renew", fenceJSON(short.Fence), jsonHdr(), 409, "stale-fence"},
		{"DELETE", fmt.Sprintf("/v1/locks/short?fence=%d", short.Fence), "", nil, 409, "stale-fence"},
		// Forged fences.
		{"DELETE", fmt.Sprintf("/v1/locks/held?fence=%d", held.Fence+1), "", nil, 409, "stale-fence"},
		{"DELETE", "/v1/locks/held?fence=18446744073709551615", "", nil, 409, "stale-fence"},
		{"DELETE", "/v1/locks/held?fence=18446744073709551616", "", nil, 400, "bad-request"},
		{"DELETE", "/v1/locks/held?fence=0", "", nil, 400, "bad-request"},
		{"DELETE", "/v1/locks/held?fence=-1", "", nil, 400, "bad-request"},
		{"DELETE", "/v1/locks/held", "", nil, 400, "bad-request"},
		{"POST", "/v1/locks/held/renew", fenceJSON(held.Fence + 1), jsonHdr(), 409, "stale-fence"},
		{"POST", "/v1/locks/held/renew", `{"fence":0}`, jsonHdr(), 400, "bad-request"},
		{"POST", "/v1/locks/held/renew", `{}`, jsonHdr(), 400, "invalid-json"},
		{"POST", "/v1/locks/held/renew", `nope`, jsonHdr(), 400, "invalid-json"},
		{"POST", "/v1/locks/held/renew", fenceJSON(held.Fence), []string{"Content-Type", "text/plain"}, 415, "unsupported-media-type"},
		{"POST", "/v1/locks/held/renew?ttl=0s", fenceJSON(held.Fence), jsonHdr(), 400, "invalid-ttl"},
		// A bad Idempotency-Key is refused before anything is proposed.
		{"POST", "/v1/locks/held/renew", fenceJSON(held.Fence), append(jsonHdr(), "Idempotency-Key", ""), 400, "invalid-key"},
		{"DELETE", fmt.Sprintf("/v1/locks/held?fence=%d", held.Fence), "", []string{"Idempotency-Key", strings.Repeat("k", 300)}, 400, "invalid-key"},
		// Held, and no wait: at once.
		{"POST", "/v1/locks/held", "", nil, 409, "locked"},
		// Durations.
		{"POST", "/v1/locks/new?ttl=0s", "", nil, 400, "invalid-ttl"},
		{"POST", "/v1/locks/new?ttl=-1s", "", nil, 400, "invalid-ttl"},
		{"POST", "/v1/locks/new?ttl=25h", "", nil, 400, "invalid-ttl"},
		{"POST", "/v1/locks/new?ttl=9999999999h", "", nil, 400, "invalid-ttl"},
		{"POST", "/v1/locks/new?ttl=soon", "", nil, 400, "invalid-ttl"},
		{"POST", "/v1/locks/new?wait=6m", "", nil, 400, "invalid-ttl"},
		{"POST", "/v1/locks/new?wait=-1s", "", nil, 400, "invalid-ttl"},
		// Names.
		{"POST", "/v1/locks/", "", nil, 400, "invalid-lock-name"},
		{"POST", "/v1/locks/a%2Fb", "", nil, 400, "invalid-lock-name"},
		{"POST", "/v1/locks/a/b", "", nil, 400, "invalid-lock-name"},
		{"POST", "/v1/locks/a%20b", "", nil, 400, "invalid-lock-name"},
		{"POST", "/v1/locks/a%00b", "", nil, 400, "invalid-lock-name"},
		{"POST", "/v1/locks/" + long, "", nil, 400, "invalid-lock-name"},
		{"GET", "/v1/locks/" + long, "", nil, 400, "invalid-lock-name"},
		{"PUT", "/v1/locks/held", "", nil, 405, "method-not-allowed"},
		{"GET", "/v1/locks/held/renew", "", nil, 405, "method-not-allowed"},
		{"GET", "/v1/locks/nobody", "", nil, 404, "not-found"},
	} {
		r := do(t, c.method, u+c.path, c.body, c.hdr...)
		if r.Status != c.status || r.ProblemType(t) != c.problem {
			t.Errorf("%s %.60s: %d %.200s, want %d %s", c.method, c.path, r.Status, r.Body, c.status, c.problem)
		}
		if c.problem == "locked" && r.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s: no Retry-After", c.method, c.path)
		}
	}
	// Nothing moved: the holders keep their locks, and may renew.
	for _, h := range []lockAnswer{held, again} {
		if r := do(t, "POST", u+"/v1/locks/"+h.Name+"/renew?ttl=2h", fenceJSON(h.Fence), jsonHdr()...); r.Status != 200 {
			t.Fatalf("renew of %s: %d %s", h.Name, r.Status, r.Body)
		}
	}
	if n := lockWaiters(t, u, "new"); n != -1 {
		t.Fatalf("a refused acquire took the lock new")
	}
}

// TestLockReleaseRetried: a release whose answer was lost, sent again
// under its Idempotency-Key, is answered as the first was (200 released),
// where a second release without one finds the fence stale; a renew
// retried so answers the first renewal's lease end, on any node.
func TestLockReleaseRetried(t *testing.T) {
	ac := startAPICluster(t, 3)
	for _, name := range []string{"keyed", "bare"} {
		r, held := acquireLock(t, ac.urls[0], name, "?ttl=1h")
		if r.Status != 201 {
			t.Fatalf("acquire %s: %d %s", name, r.Status, r.Body)
		}
		var hdr []string
		if name == "keyed" {
			hdr = []string{"Idempotency-Key", "release-" + name}
		}
		renew := append(jsonHdr(), "Idempotency-Key", "renew-"+name)
		first := do(t, "POST", ac.urls[1]+"/v1/locks/"+name+"/renew?ttl=2h", fenceJSON(held.Fence), renew...)
		again := do(t, "POST", ac.urls[2]+"/v1/locks/"+name+"/renew?ttl=2h", fenceJSON(held.Fence), renew...)
		if first.Status != 200 || again.Status != 200 || again.Body != first.Body {
			t.Fatalf("%s: renew retried: %d %s, then %d %s; want the first answer twice", name, first.Status, first.Body, again.Status, again.Body)
		}
		path := fmt.Sprintf("/v1/locks/%s?fence=%d", name, held.Fence)
		if r := do(t, "DELETE", ac.urls[1]+path, "", hdr...); r.Status != 200 {
			t.Fatalf("%s: release: %d %s", name, r.Status, r.Body)
		}
		r = do(t, "DELETE", ac.urls[2]+path, "", hdr...)
		want, problem := 200, ""
		if name == "bare" {
			want, problem = 409, "stale-fence"
		}
		if r.Status != want || (problem != "" && r.ProblemType(t) != problem) {
			t.Errorf("%s: the release again: %d %s, want %d %q", name, r.Status, r.Body, want, problem)
		}
		if n := lockWaiters(t, ac.urls[0], name); n != -1 {
			t.Errorf("%s: still held after its release", name)
		}
	}
}

// TestLockWaiterGoesAway: a waiter whose client closes its connection
// leaves the queue at once, by a log entry, so the lock it waited for is
// never granted to nobody; a waiter whose wait runs out leaves too.
func TestLockWaiterGoesAway(t *testing.T) {
	t.Parallel()
	ac := startAPIs(t, 1, nil)
	u := ac.urls[0]
	r, held := acquireLock(t, u, "door", "?ttl=1h")
	if r.Status != 201 {
		t.Fatalf("acquire: %d %s", r.Status, r.Body)
	}
	c, err := net.Dial("tcp", strings.TrimPrefix(u, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST /v1/locks/door?wait=5m HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\n\r\n", strings.TrimPrefix(u, "http://"))
	untilWaiters(t, u, "door", 1)
	c.Close()
	untilWaiters(t, u, "door", 0) // well before its 5 minutes
	if n := ac.locks[firstStore(ac)].Waiting(); n != 0 {
		t.Fatalf("%d acquires still wait on the node", n)
	}
	// A waiter whose wait runs out gets 409 locked, and leaves.
	if r, _ := acquireLock(t, u, "door", "?wait=100ms"); r.Status != 409 || r.ProblemType(t) != "locked" {
		t.Fatalf("a wait that ran out: %d %s", r.Status, r.Body)
	}
	if n := lockWaiters(t, u, "door"); n != 0 {
		t.Fatalf("%d waiters after the wait ran out", n)
	}
	// The release frees the lock: nobody is left to take it.
	if r := do(t, "DELETE", fmt.Sprintf("%s/v1/locks/door?fence=%d", u, held.Fence), ""); r.Status != 200 {
		t.Fatalf("release: %d %s", r.Status, r.Body)
	}
	untilWaiters(t, u, "door", -1)
	// A pipelined client keeps its place: the watch only peeks.
	c2, err := net.Dial("tcp", strings.TrimPrefix(u, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	host := strings.TrimPrefix(u, "http://")
	fmt.Fprintf(c2, "POST /v1/locks/door?wait=1m HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\n\r\nGET /v1/locks/door HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
	br := bufio.NewReader(c2)
	for _, want := range []int{201, 200} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("pipelined answer %d, want %d", resp.StatusCode, want)
		}
	}
}

// firstStore is the store the cluster's listeners share.
func firstStore(ac *apiCluster) nodeStore {
	for s := range ac.locks {
		return s
	}
	return nil
}
