package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// stuckPage is GET /v1/stuck's answer.
type stuckPage struct {
	Stuck []stuckJSON `json:"stuck"`
	Next  string      `json:"next"`
}

// stuckGauge reads idemgate_stuck{kind} from base's metrics.
func stuckGauge(t *testing.T, base, kind string) int {
	t.Helper()
	re := regexp.MustCompile(`(?m)^idemgate_stuck\{kind="` + kind + `"\} (\S+)$`)
	m := re.FindStringSubmatch(do(t, "GET", base+"/metrics", "").Body)
	if m == nil {
		t.Fatalf("no idemgate_stuck{kind=%q} on %s", kind, base)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestStuckWork: on a real 3-node cluster, gateway records left in flight
// past their processing deadline and once claims left begun past their
// lease are counted (idemgate_stuck on every node) and listed by GET
// /v1/stuck on every node, earliest deadline first, a page at a time; a
// claim completed late, or taken over, leaves the list; bad parameters are
// refused with the field named.
func TestStuckWork(t *testing.T) {
	ac := startAPICluster(t, 3)
	u := ac.urls
	leader := ac.c.Stores[ac.c.WaitLeader(10*time.Second)]
	ctx := context.Background()
	// Three records whose gateway owner never completed (a crashed node).
	for i := 0; i < 3; i++ {
		rk := command.RecordKey("pay", fmt.Sprintf("u%d", i), fmt.Sprintf("order-%d", i))
		if res, err := leader.Begin(ctx, command.BeginRequest{Key: rk, Fingerprint: make([]byte, 32), TTL: time.Hour, Timeout: 200 * time.Millisecond}); err != nil || res.Code != command.CodeCreated {
			t.Fatalf("begin record %d: %+v %v", i, res, err)
		}
	}
	// One that is still within its deadline, and one completed: never stuck.
	if res, err := leader.Begin(ctx, command.BeginRequest{Key: command.RecordKey("pay", "", "live"), Fingerprint: make([]byte, 32), TTL: time.Hour, Timeout: time.Hour}); err != nil || res.Code != command.CodeCreated {
		t.Fatalf("begin live record: %+v %v", res, err)
	}
	// Two claims whose holders stopped, one that completes.
	_, c1 := beginOnce(t, u[0], "sms/msg-1", "hello", "300ms")
	beginOnce(t, u[1], "sms/msg-2", "hello", "300ms")
	_, done := beginOnce(t, u[2], "sms/msg-3", "hello", "300ms")
	if r := do(t, "POST", u[2]+"/v1/once/sms/msg-3/complete", completeJSON(done.Fence, "sent"), jsonHdr()...); r.Status != 200 {
		t.Fatalf("complete msg-3: %d %s", r.Status, r.Body)
	}
	list := func(base, query string) stuckPage {
		t.Helper()
		r := do(t, "GET", base+"/v1/stuck"+query, "")
		var p stuckPage
		if r.Status != 200 || json.Unmarshal([]byte(r.Body), &p) != nil {
			t.Fatalf("GET /v1/stuck%s: %d %s", query, r.Status, r.Body)
		}
		return p
	}
	testsupport.WaitFor(t, "five stuck on every node", time.Minute, func() bool {
		for _, base := range u {
			if len(list(base, "").Stuck) != 5 || stuckGauge(t, base, "record") != 3 || stuckGauge(t, base, "once") != 2 {
				return false
			}
		}
		return true
	})
	all := list(u[1], "").Stuck
	var seen []string
	last := ""
	for _, s := range all {
		if s.LapsedAt < last {
			t.Fatalf("not earliest first: %+v", all)
		}
		last = s.LapsedAt
		seen = append(seen, s.Kind+" "+s.Scope+"/"+s.Tenant+"/"+s.Key)
	}
	for _, want := range []string{"record pay/u0/order-0", "record pay/u1/order-1", "record pay/u2/order-2", "once sms//msg-1", "once sms//msg-2"} {
		found := false
		for _, s := range seen {
			found = found || s == want
		}
		if !found {
			t.Fatalf("%s not listed: %v", want, seen)
		}
	}
	// Pages of two: the same five, in order, and no more.
	var paged []stuckJSON
	query := "?limit=2"
	for i := 0; ; i++ {
		p := list(u[2], query)
		if len(p.Stuck) > 2 || i > 5 {
			t.Fatalf("page %d: %+v", i, p)
		}
		paged = append(paged, p.Stuck...)
		if p.Next == "" {
			break
		}
		query = "?limit=2&after=" + url.QueryEscape(p.Next)
	}
	if fmt.Sprint(paged) != fmt.Sprint(all) {
		t.Fatalf("paged %v, want %v", paged, all)
	}
	if p := list(u[0], "?consistency=local&limit=1000"); len(p.Stuck) > 5 {
		t.Fatalf("local read: %+v", p)
	}
	// A holder that comes back late completes (nobody took over); another
	// caller takes the other claim over: both leave the list.
	if r := do(t, "POST", u[0]+"/v1/once/sms/msg-1/complete", completeJSON(c1.Fence, "sent late"), jsonHdr()...); r.Status != 200 {
		t.Fatalf("late complete: %d %s", r.Status, r.Body)
	}
	if r, ans := beginOnce(t, u[1], "sms/msg-2", "hello", "1h"); r.Status != 201 || !ans.TakenOver {
		t.Fatalf("takeover: %d %s", r.Status, r.Body)
	}
	testsupport.WaitFor(t, "the claims to leave the list", time.Minute, func() bool {
		for _, base := range u {
			if len(list(base, "").Stuck) != 3 || stuckGauge(t, base, "once") != 0 {
				return false
			}
		}
		return true
	})
	for _, c := range []struct{ query, problem string }{
		{"?limit=0", "bad-request"},
		{"?limit=1001", "bad-request"},
		{"?limit=ten", "bad-request"},
		{"?after=not*base64", "bad-request"},
		{"?after=AAAA", "bad-request"}, // decodes, but shorter than any cursor
	} {
		r := do(t, "GET", u[0]+"/v1/stuck"+c.query, "")
		if r.Status != 400 || r.ProblemType(t) != c.problem {
			t.Errorf("GET /v1/stuck%s = %d %s", c.query, r.Status, r.Body)
		}
	}
	// A cursor that decodes but points nowhere is a place to start from.
	if p := list(u[0], "?after=__________________w"); len(p.Stuck) != 0 || p.Next != "" {
		t.Errorf("a cursor past every entry: %+v", p)
	}
	if r := do(t, "POST", u[0]+"/v1/stuck", ""); r.Status != 405 {
		t.Errorf("POST /v1/stuck = %d", r.Status)
	}
}
