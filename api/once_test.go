package api

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// onceCall is one once call and the answer it must get.
type onceCall struct {
	method, path, body string
	hdr                []string
	status             int
	problem            string
}

func jsonHdr() []string { return []string{"Content-Type", "application/json"} }

// beginOnce begins /v1/once/{path} and decodes a 201's or 200's answer.
func beginOnce(t *testing.T, base, path, payload, lease string) (reply, beginAnswer) {
	t.Helper()
	r := do(t, "POST", base+"/v1/once/"+path+"/begin?lease="+lease, payload)
	var ans beginAnswer
	if r.Status == 201 || r.Status == 200 {
		if err := json.Unmarshal([]byte(r.Body), &ans); err != nil {
			t.Fatalf("begin answer %s: %v", r.Body, err)
		}
	}
	return r, ans
}

// waitTakeOver begins until the holder's lease has run out and the begin
// takes over; each refusal must be in-progress with a Retry-After. Bounded
// by count, not by a timed expectation.
func waitTakeOver(t *testing.T, base, path, payload, lease string) beginAnswer {
	t.Helper()
	for i := 0; i < 400; i++ {
		r, ans := beginOnce(t, base, path, payload, lease)
		switch {
		case r.Status == 201:
			return ans
		case r.Status == 503: // a leader election: fail closed, retry
		case r.Status != 409 || r.ProblemType(t) != "in-progress" || r.Header.Get("Retry-After") == "":
			t.Fatalf("begin while waiting for the lease to run out: %d %v %s", r.Status, r.Header, r.Body)
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatal("the lease never ran out")
	return beginAnswer{}
}

// hugeExchange sends head and then n bytes on a raw connection (the body
// written meanwhile: the answer, and the close, may come while it is
// written) and returns the answer's status.
func hugeExchange(t *testing.T, addr, head string, n int) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		c.Write([]byte(head))
		c.Write(bytes.Repeat([]byte("A"), n))
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%.40s: %v", head, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func fenceJSON(fence uint64) string { return fmt.Sprintf(`{"fence":%d}`, fence) }

func completeJSON(fence uint64, result string) string {
	return fmt.Sprintf(`{"fence":%d,"result":%q}`, fence, base64.StdEncoding.EncodeToString([]byte(result)))
}

// TestOnceHostile: the once API against hostile and racing callers: a
// complete after a takeover is refused and the first result kept, a renew
// after expiry is refused, another payload is key reuse, huge, malformed
// and forged input gets its exact 4xx, and nothing is stored for any of it.
func TestOnceHostile(t *testing.T) {
	t.Parallel()
	ac := startAPIs(t, 2, nil)
	u := ac.urls
	r, first := beginOnce(t, u[0], "sms/msg-1", "send hello to +4912345", "300ms")
	if r.Status != 201 || first.State != "begun" || first.Fence == 0 || first.TakenOver {
		t.Fatalf("first begin: %d %s", r.Status, r.Body)
	}
	if lease, err := time.Parse(time.RFC3339Nano, first.LeaseExpiresAt); err != nil || lease.IsZero() {
		t.Fatalf("lease_expires_at %q: %v", first.LeaseExpiresAt, err)
	}
	// The holder pauses past its lease; the next caller takes over.
	second := waitTakeOver(t, u[1], "sms/msg-1", "send hello to +4912345", "1h")
	if second.Fence <= first.Fence || !second.TakenOver {
		t.Fatalf("takeover: fence %d after %d (%+v)", second.Fence, first.Fence, second)
	}
	f1, f2 := first.Fence, second.Fence
	calls := []onceCall{
		// The paused holder wakes: its renew and complete are refused.
		{"POST", "/v1/once/sms/msg-1/renew", fenceJSON(f1), jsonHdr(), 409, "stale-fence"},
		{"POST", "/v1/once/sms/msg-1/complete", completeJSON(f1, "late"), jsonHdr(), 409, "stale-fence"},
		{"POST", "/v1/once/sms/msg-1/release", fenceJSON(f1), jsonHdr(), 409, "stale-fence"},
		// Another payload under the key: key reuse, whatever the state.
		{"POST", "/v1/once/sms/msg-1/begin", "send hello to +4900000", nil, 422, "key-reuse"},
		{"POST", "/v1/once/sms/msg-1/begin", "send hello to +4912345", nil, 409, "in-progress"},
		// Forged and malformed fences.
		{"POST", "/v1/once/sms/msg-1/complete", completeJSON(f2+1, "forged"), jsonHdr(), 409, "stale-fence"},
		{"POST", "/v1/once/sms/msg-1/complete", `{"fence":18446744073709551615,"result":""}`, jsonHdr(), 409, "stale-fence"},
		{"POST", "/v1/once/sms/msg-1/complete", `{"fence":18446744073709551616,"result":""}`, jsonHdr(), 400, "invalid-json"},
		{"POST", "/v1/once/sms/msg-1/complete", `{"fence":-1,"result":""}`, jsonHdr(), 400, "invalid-json"},
		{"POST", "/v1/once/sms/msg-1/complete", `{"fence":1.5,"result":""}`, jsonHdr(), 400, "invalid-json"},
		{"POST", "/v1/once/sms/msg-1/complete", `{"fence":0,"result":""}`, jsonHdr(), 400, "bad-request"},
		{"POST", "/v1/once/sms/msg-1/complete", `{"result":""}`, jsonHdr(), 400, "invalid-json"},
		{"POST", "/v1/once/sms/msg-1/complete", fenceJSON(f2), jsonHdr(), 400, "invalid-json"},
		{"POST", "/v1/once/sms/msg-1/complete", fmt.Sprintf(`{"fence":%d,"result":"not base64!"}`, f2), jsonHdr(), 400, "invalid-json"},
		{"POST", "/v1/once/sms/msg-1/complete", fmt.Sprintf(`{"fence":%d,"result":"","extra":1}`, f2), jsonHdr(), 400, "invalid-json"},
		{"POST", "/v1/once/sms/msg-1/complete", fmt.Sprintf(`{"fence":%d,"result":""}{}`, f2), jsonHdr(), 400, "invalid-json"},
		{"POST", "/v1/once/sms/msg-1/complete", `not json`, jsonHdr(), 400, "invalid-json"},
		{"POST", "/v1/once/sms/msg-1/complete", completeJSON(f2, "x"), []string{"Content-Type", "text/plain"}, 415, "unsupported-media-type"},
		{"POST", "/v1/once/sms/msg-1/renew", fmt.Sprintf(`{"fence":%d,"result":"eA=="}`, f2), jsonHdr(), 400, "invalid-json"},
		// Leases.
		{"POST", "/v1/once/sms/msg-1/begin?lease=0s", "x", nil, 400, "invalid-ttl"},
		{"POST", "/v1/once/sms/msg-1/begin?lease=-1s", "x", nil, 400, "invalid-ttl"},
		{"POST", "/v1/once/sms/msg-1/begin?lease=25h", "x", nil, 400, "invalid-ttl"},
		{"POST", "/v1/once/sms/msg-1/begin?lease=soon", "x", nil, 400, "invalid-ttl"},
		{"POST", "/v1/once/sms/msg-1/renew?lease=forever", fenceJSON(f2), jsonHdr(), 400, "invalid-ttl"},
		// Scopes, keys, paths, methods.
		{"POST", "/v1/once/bad%20scope/k/begin", "x", nil, 400, "invalid-scope"},
		{"POST", "/v1/once/" + strings.Repeat("s", 65) + "/k/begin", "x", nil, 400, "invalid-scope"},
		{"POST", "/v1/once/sms/a%00b/begin", "x", nil, 400, "invalid-key"},
		{"POST", "/v1/once/sms/a%20b/begin", "x", nil, 400, "invalid-key"},
		{"POST", "/v1/once/sms/" + strings.Repeat("k", 256) + "/begin", "x", nil, 400, "invalid-key"},
		{"POST", "/v1/once/sms//begin", "x", nil, 400, "invalid-key"},
		{"POST", "/v1/once/sms/k/start", "x", nil, 404, "not-found"},
		{"POST", "/v1/once/sms/k/begin/more", "x", nil, 404, "not-found"},
		{"POST", "/v1/once/sms", "x", nil, 404, "not-found"},
		{"GET", "/v1/once/sms/k/begin", "", nil, 405, "method-not-allowed"},
		{"DELETE", "/v1/once/sms/msg-1", "", nil, 405, "method-not-allowed"},
		{"GET", "/v1/once/sms/never", "", nil, 404, "not-found"},
		{"GET", "/v1/once/bad%20scope/k", "", nil, 400, "invalid-scope"},
		// The holder that took over completes; the stored result is its own.
		{"POST", "/v1/once/sms/msg-1/complete", completeJSON(f2, "sent:42"), jsonHdr(), 200, ""},
		{"POST", "/v1/once/sms/msg-1/complete", completeJSON(f2, "sent:42"), jsonHdr(), 200, ""},
		{"POST", "/v1/once/sms/msg-1/complete", completeJSON(f2, "sent:43"), jsonHdr(), 409, "stale-fence"},
		{"POST", "/v1/once/sms/msg-1/complete", completeJSON(f1, "late"), jsonHdr(), 409, "stale-fence"},
		{"POST", "/v1/once/sms/msg-1/renew", fenceJSON(f2), jsonHdr(), 409, "stale-fence"},
		{"POST", "/v1/once/sms/msg-1/release", fenceJSON(f2), jsonHdr(), 409, "stale-fence"},
		{"POST", "/v1/once/sms/msg-1/begin", "send hello to +4900000", nil, 422, "key-reuse"},
	}
	for i, c := range calls {
		r := do(t, c.method, u[i%2]+c.path, c.body, c.hdr...)
		if r.Status != c.status || (c.problem != "" && r.ProblemType(t) != c.problem) {
			t.Fatalf("step %d %s %s %.80s = %d %.300s, want %d %s", i, c.method, c.path, c.body, r.Status, r.Body, c.status, c.problem)
		}
		if i == 0 {
			// Huge payloads and results, over limits.max_request_body (1 MiB
			// here): 413 as soon as the length is known. Raw connections,
			// since the answer (and the close) comes while a client would
			// still be writing the body.
			for _, h := range []string{
				"POST /v1/once/sms/msg-1/complete HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2097152\r\n\r\n",
				"POST /v1/once/sms/msg-1/begin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2097152\r\n\r\n",
			} {
				if st := hugeExchange(t, strings.TrimPrefix(u[0], "http://"), h, 2<<20); st != 413 {
					t.Fatalf("%.40s with 2 MiB = %d", h, st)
				}
			}
		}
	}
	// Every later begin replays the result of the holder that took over.
	r, ans := beginOnce(t, u[0], "sms/msg-1", "send hello to +4912345", "30s")
	if r.Status != 200 || ans.State != "completed" || ans.Result == nil || string(*ans.Result) != "sent:42" || ans.Fence != f2 {
		t.Fatalf("begin after complete: %d %s", r.Status, r.Body)
	}
	g := do(t, "GET", u[1]+"/v1/once/sms/msg-1", "")
	var cl claimAnswer
	if g.Status != 200 || json.Unmarshal([]byte(g.Body), &cl) != nil || cl.State != "completed" || cl.Fence != f2 ||
		cl.Result == nil || string(*cl.Result) != "sent:42" || cl.LeaseExpiresAt != "" || cl.Scope != "sms" || cl.Key != "msg-1" {
		t.Fatalf("GET: %d %s", g.Status, g.Body)
	}
	// Nothing the refused calls named was stored.
	for _, k := range []string{"sms/k", "sms/never", "sms/a%20b"} {
		if r := do(t, "GET", u[0]+"/v1/once/"+k, ""); r.Status != 404 && r.Status != 400 {
			t.Errorf("GET %s after refused calls: %d %s", k, r.Status, r.Body)
		}
	}
	// The counters, summed over both listeners (each node counts what it
	// answered); each series is there from the start.
	for name, want := range map[string]int{"begun": 1, "taken_over": 1, "completed": 2, "stale_completes": 5, "replayed": 1} {
		re := regexp.MustCompile(`(?m)^idemgate_once_` + name + `_total (\S+)$`)
		sum := 0
		for _, base := range u {
			got := re.FindStringSubmatch(do(t, "GET", base+"/metrics", "").Body)
			if got == nil {
				t.Fatalf("no idemgate_once_%s_total on %s", name, base)
			}
			n, _ := strconv.Atoi(got[1])
			sum += n
		}
		if sum != want {
			t.Errorf("idemgate_once_%s_total = %d, want %d", name, sum, want)
		}
	}
}

// TestOnceRenewReleaseRetention: a renew keeps the claim from being taken
// over, a release lets the next begin run the work again with a higher
// fence, an empty result is a result, and a key may hold an encoded slash.
// The scope "brief" keeps a claim a second: then it is gone.
func TestOnceRenewReleaseRetention(t *testing.T) {
	t.Parallel()
	ac := startAPIs(t, 1, nil)
	u := ac.urls[0]
	r, a := beginOnce(t, u, "jobs/nightly%2F2026-01-01", "", "1h")
	if r.Status != 201 {
		t.Fatalf("begin: %d %s", r.Status, r.Body)
	}
	rn := do(t, "POST", u+"/v1/once/jobs/nightly%2F2026-01-01/renew?lease=2h", fenceJSON(a.Fence), jsonHdr()...)
	var renewed struct {
		Fence          uint64 `json:"fence"`
		LeaseExpiresAt string `json:"lease_expires_at"`
	}
	if rn.Status != 200 || json.Unmarshal([]byte(rn.Body), &renewed) != nil || renewed.LeaseExpiresAt <= a.LeaseExpiresAt {
		t.Fatalf("renew: %d %s (begin's lease %s)", rn.Status, rn.Body, a.LeaseExpiresAt)
	}
	if r := do(t, "POST", u+"/v1/once/jobs/nightly%2F2026-01-01/release", fenceJSON(a.Fence), jsonHdr()...); r.Status != 200 {
		t.Fatalf("release: %d %s", r.Status, r.Body)
	}
	if r := do(t, "GET", u+"/v1/once/jobs/nightly%2F2026-01-01", ""); r.Status != 404 {
		t.Fatalf("GET after release: %d %s", r.Status, r.Body)
	}
	r, b := beginOnce(t, u, "jobs/nightly%2F2026-01-01", "", "1h")
	if r.Status != 201 || b.Fence <= a.Fence || b.TakenOver {
		t.Fatalf("begin after release: %d %s (first fence %d)", r.Status, r.Body, a.Fence)
	}
	if r := do(t, "POST", u+"/v1/once/jobs/nightly%2F2026-01-01/complete", completeJSON(b.Fence, ""), jsonHdr()...); r.Status != 200 {
		t.Fatalf("complete: %d %s", r.Status, r.Body)
	}
	if r, ans := beginOnce(t, u, "jobs/nightly%2F2026-01-01", "", "1h"); r.Status != 200 || !strings.Contains(r.Body, `"result":""`) || ans.Result == nil || len(*ans.Result) != 0 {
		t.Fatalf("replay of an empty result: %d %s", r.Status, r.Body)
	}

	// Retention: the scope "brief" keeps a claim one second after its complete.
	r, c := beginOnce(t, u, "brief/k", "p", "30s")
	if r.Status != 201 {
		t.Fatalf("begin: %d %s", r.Status, r.Body)
	}
	if r := do(t, "POST", u+"/v1/once/brief/k/complete", completeJSON(c.Fence, "done"), jsonHdr()...); r.Status != 200 {
		t.Fatalf("complete: %d %s", r.Status, r.Body)
	}
	for i := 0; ; i++ {
		r, d := beginOnce(t, u, "brief/k", "p", "30s")
		if r.Status == 201 {
			if d.Fence <= c.Fence {
				t.Fatalf("a claim begun after retention has fence %d, the old one had %d", d.Fence, c.Fence)
			}
			break
		}
		if r.Status != 200 || i == 400 {
			t.Fatalf("begin before the retention ran out: %d %s (try %d)", r.Status, r.Body, i)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// untilServed repeats a call while the cluster answers 503 (an election
// after a leader kill), a bounded number of times.
func untilServed(t *testing.T, call func() reply) reply {
	t.Helper()
	for i := 0; i < 400; i++ {
		if r := call(); r.Status != 503 {
			return r
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatal("the cluster answered 503 throughout")
	return reply{}
}

// TestOnceTakeoverCluster: on a real 3-node cluster (Raft over loopback
// TCP, bbolt files), holders with short leases pause, are taken over on
// other nodes, and the leader is killed between two takeovers: the fences
// strictly increase across it, every paused holder's late complete is
// refused, and every node then answers the last holder's result.
func TestOnceTakeoverCluster(t *testing.T) {
	ac := startAPICluster(t, 3)
	leader := ac.c.WaitLeader(10 * time.Second)
	u := ac.urls
	const payload = "charge order 77"
	r, a := beginOnce(t, u[(leader+1)%3], "payments/order-77", payload, "300ms")
	if r.Status != 201 {
		t.Fatalf("A's begin: %d %s", r.Status, r.Body)
	}
	b := waitTakeOver(t, u[(leader+2)%3], "payments/order-77", payload, "300ms")
	if b.Fence <= a.Fence {
		t.Fatalf("B's fence %d is not above A's %d", b.Fence, a.Fence)
	}
	ac.c.Stop(leader)
	survivors := []string{u[(leader+1)%3], u[(leader+2)%3]}
	c := waitTakeOver(t, survivors[0], "payments/order-77", payload, "1h")
	if c.Fence <= b.Fence {
		t.Fatalf("C's fence %d (after the leader kill) is not above B's %d", c.Fence, b.Fence)
	}
	// A and B wake and complete: refused, C's claim untouched.
	for _, late := range []struct {
		name  string
		fence uint64
	}{{"A", a.Fence}, {"B", b.Fence}} {
		r := untilServed(t, func() reply {
			return do(t, "POST", survivors[1]+"/v1/once/payments/order-77/complete", completeJSON(late.fence, "charged by "+late.name), jsonHdr()...)
		})
		if r.Status != 409 || r.ProblemType(t) != "stale-fence" {
			t.Fatalf("%s's late complete: %d %s", late.name, r.Status, r.Body)
		}
	}
	r = untilServed(t, func() reply {
		return do(t, "POST", survivors[1]+"/v1/once/payments/order-77/complete", completeJSON(c.Fence, "charged by C"), jsonHdr()...)
	})
	if r.Status != 200 {
		t.Fatalf("C's complete: %d %s", r.Status, r.Body)
	}
	for _, base := range survivors {
		r, ans := beginOnce(t, base, "payments/order-77", payload, "1h")
		if r.Status != 200 || ans.Result == nil || string(*ans.Result) != "charged by C" || ans.Fence != c.Fence {
			t.Fatalf("begin on %s after C's complete: %d %s", base, r.Status, r.Body)
		}
	}
}
