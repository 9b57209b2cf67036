package fsm

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// stuckKeys lists every stuck entry at h's clock, a page of limit at a time.
func stuckKeys(t *testing.T, h *harness, limit int) []string {
	t.Helper()
	var out []string
	var after []byte
	for pages := 0; ; pages++ {
		page, next, err := h.f.Stuck(h.now(), after, limit)
		if err != nil || pages > 100 {
			t.Fatalf("Stuck: %v after %d pages", err, pages)
		}
		if len(page) > limit {
			t.Fatalf("a page of %d, limit %d", len(page), limit)
		}
		for _, s := range page {
			out = append(out, fmt.Sprintf("%s %s", s.Kind, s.Key))
		}
		if next == nil {
			return out
		}
		after = next
	}
}

// TestStuckWork: in-flight records past their processing deadline and
// begun claims past their lease are listed, earliest deadline first, paged;
// a record or claim leaves the list when completed, released, taken over,
// renewed or removed by its expiry.
func TestStuckWork(t *testing.T) {
	h := newHarness(t)
	h.clock = tableStamp
	begin := func(key string, timeout time.Duration) *command.Result {
		return h.apply(*command.RecordBeginCommand(command.BeginRequest{Key: []byte(key), Fingerprint: []byte("fp"), TTL: time.Hour, Timeout: timeout, ReleaseUnknown: true}))
	}
	claim := func(key string, lease time.Duration) *command.Result {
		return h.apply(*command.OnceBeginCommand([]byte(key), command.OnceFingerprint([]byte(key)), lease, time.Hour))
	}
	r1 := begin("r1", time.Second)
	begin("r2", 2*time.Second)
	begin("r3", 3*time.Second)
	c1 := claim("c1", 1500*time.Millisecond)
	claim("c2", 2500*time.Millisecond)
	c3 := claim("c3", 10*time.Second)
	if got := stuckKeys(t, h, 10); len(got) != 0 {
		t.Fatalf("stuck before any deadline: %v", got)
	}
	h.advance(3 * time.Second)
	want := []string{"record r1", "once c1", "record r2", "once c2", "record r3"}
	for _, limit := range []int{1, 2, 5, 1000} {
		if got := stuckKeys(t, h, limit); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("pages of %d: %v, want %v", limit, got, want)
		}
	}
	// A renew moves the claim's deadline: listed once, at its new one.
	if r := h.apply(*command.OnceRenewCommand([]byte("c3"), c3.Fence, 30*time.Minute)); r.Code != command.CodeOK {
		t.Fatalf("renew c3: %+v", r)
	}
	if recs, claims, err := h.f.CountStuck(h.now(), 100); err != nil || recs != 3 || claims != 2 {
		t.Fatalf("CountStuck = %d records, %d claims, %v", recs, claims, err)
	}
	if recs, claims, _ := h.f.CountStuck(h.now(), 3); recs+claims != 3 {
		t.Fatalf("CountStuck bounded at 3 visited %d", recs+claims)
	}
	// A snapshot carries the index: a follower rebuilt from it lists the same.
	other := newHarness(t)
	other.clock = h.clock
	if err := other.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, h.f)))); err != nil {
		t.Fatal(err)
	}
	if got := stuckKeys(t, other, 10); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("restored from a snapshot: %v, want %v", got, want)
	}
	// Each way out of the list.
	if r := h.apply(*command.RecordCompleteCommand(command.CompleteRequest{Key: []byte("r1"), Fence: r1.Fence, Status: 200})); r.Code != command.CodeOK {
		t.Fatalf("late complete: %+v", r)
	}
	if r := h.apply(*command.OnceCompleteCommand([]byte("c1"), c1.Fence, []byte("done"), time.Hour)); r.Code != command.CodeOK {
		t.Fatalf("late claim complete: %+v", r)
	}
	if r := begin("r2", time.Minute); r.Code != command.CodeCreated { // taken over: in flight again, deadline ahead
		t.Fatalf("takeover of r2: %+v", r)
	}
	if r := claim("c2", time.Minute); r.Code != command.CodeTakenOver {
		t.Fatalf("takeover of c2: %+v", r)
	}
	if got := stuckKeys(t, h, 10); fmt.Sprint(got) != "[record r3]" {
		t.Fatalf("after complete and takeover: %v", got)
	}
	if r := h.apply(*command.RecordReleaseCommand([]byte("r3"), 0)); r.Code != command.CodeOK {
		t.Fatalf("release r3: %+v", r)
	}
	if got := stuckKeys(t, h, 10); len(got) != 0 {
		t.Fatalf("after release: %v", got)
	}
	// A taken-over record and claim lapse at their new deadlines; removed
	// by the sweeper, they leave the list.
	h.advance(time.Hour)
	if got := stuckKeys(t, h, 10); fmt.Sprint(got) != "[record r2 once c2 once c3]" {
		t.Fatalf("an hour later: %v", got)
	}
	due, err := h.f.Due(h.now().Add(time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	h.advance(time.Hour)
	if r := h.apply(*command.ExpireCommand(due)); r.Code != command.CodeOK {
		t.Fatalf("expire: %+v", r)
	}
	if got := stuckKeys(t, h, 10); len(got) != 0 {
		t.Fatalf("after the sweep: %v", got)
	}
	// A forged cursor (not an index key) is only a place to start from.
	if page, _, err := h.f.Stuck(h.now(), []byte("\xff\xff"), 10); err != nil || len(page) != 0 {
		t.Fatalf("forged cursor: %v %v", page, err)
	}
}
