package resp

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// TestIdemOnce: IDEM.BEGIN / RENEW / COMPLETE / RELEASE over the protocol,
// as the HTTP API has them: the first begin's claim, in-progress while its
// lease is live, a takeover after it ran out with a higher fence, the
// paused holder's calls refused (-STALEFENCE) and the new holder's result
// kept and replayed; another payload -KEYREUSE; bad arguments refused
// with one line each, nothing stored.
func TestIdemOnce(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", nil)
	rdb := client(t, srv.Addr())
	ctx := context.Background()
	do := func(args ...any) ([]any, error) {
		v, err := rdb.Do(ctx, args...).Result()
		if err != nil {
			return nil, err
		}
		if a, ok := v.([]any); ok {
			return a, nil
		}
		return []any{v}, nil
	}
	first, err := do("IDEM.BEGIN", "sms", "msg-1", 200, "hello")
	if err != nil || first[0] != "begun" || first[1].(int64) <= 0 || first[2] != nil {
		t.Fatalf("first begin: %v %v", first, err)
	}
	f1 := first[1].(int64)
	var second []any
	for i := 0; ; i++ {
		r, err := do("IDEM.BEGIN", "sms", "msg-1", 60000, "hello")
		if err != nil {
			t.Fatalf("begin while waiting: %v", err)
		}
		if r[0] == "begun" {
			second = r
			break
		}
		if r[0] != "in-progress" || r[1].(int64) != f1 || i == 400 {
			t.Fatalf("begin while the lease is live: %v (try %d)", r, i)
		}
		time.Sleep(25 * time.Millisecond)
	}
	f2 := second[1].(int64)
	if f2 <= f1 {
		t.Fatalf("takeover fence %d, first %d", f2, f1)
	}
	refused := []struct {
		args []any
		want string
	}{
		{[]any{"IDEM.COMPLETE", "sms", "msg-1", f1, "late"}, "STALEFENCE "},
		{[]any{"IDEM.RENEW", "sms", "msg-1", f1, 1000}, "STALEFENCE "},
		{[]any{"IDEM.RELEASE", "sms", "msg-1", f1}, "STALEFENCE "},
		{[]any{"IDEM.COMPLETE", "sms", "msg-1", "18446744073709551615", "forged"}, "STALEFENCE "},
		{[]any{"IDEM.BEGIN", "sms", "msg-1", 1000, "other"}, "KEYREUSE "},
		{[]any{"IDEM.BEGIN", "sms", "msg-1", 0, "hello"}, "ERR invalid lease"},
		{[]any{"IDEM.BEGIN", "sms", "msg-1", -5, "hello"}, "ERR invalid lease"},
		{[]any{"IDEM.BEGIN", "sms", "msg-1", 86400001, "hello"}, "ERR invalid lease"},
		{[]any{"IDEM.BEGIN", "sms", "msg-1", "soon", "hello"}, "ERR invalid lease"},
		{[]any{"IDEM.BEGIN", "sms", "msg-1", 1000, "hello", "extra"}, "ERR syntax error"},
		{[]any{"IDEM.BEGIN", "sms", "msg-1"}, "ERR wrong number of arguments"},
		{[]any{"IDEM.BEGIN", "bad scope", "k", 1000}, "ERR scope must be"},
		{[]any{"IDEM.BEGIN", "sms", "a b", 1000}, "ERR invalid key"},
		{[]any{"IDEM.BEGIN", "sms", "", 1000}, "ERR invalid key"},
		{[]any{"IDEM.BEGIN", "sms", strings.Repeat("k", 256), 1000}, "ERR invalid key"},
		{[]any{"IDEM.COMPLETE", "sms", "msg-1", 0, "x"}, "ERR invalid fence"},
		{[]any{"IDEM.COMPLETE", "sms", "msg-1", -1, "x"}, "ERR invalid fence"},
		{[]any{"IDEM.COMPLETE", "sms", "msg-1", "18446744073709551616", "x"}, "ERR invalid fence"},
		{[]any{"IDEM.RENEW", "sms", "msg-1", f2, 0}, "ERR invalid lease"},
		{[]any{"IDEM.RELEASE", "sms", "msg-1", "x"}, "ERR invalid fence"},
	}
	for _, r := range refused {
		if _, err := do(r.args...); err == nil || !strings.HasPrefix(err.Error(), r.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want %q...", r.args, err, r.want)
		}
	}
	if v, err := rdb.Do(ctx, "IDEM.RENEW", "sms", "msg-1", f2, 30000).Int64(); err != nil || v < time.Now().Add(20*time.Second).UnixMilli() {
		t.Fatalf("renew: %d %v", v, err)
	}
	if err := rdb.Do(ctx, "IDEM.COMPLETE", "sms", "msg-1", f2, "sid=42").Err(); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if _, err := do("IDEM.COMPLETE", "sms", "msg-1", f1, "late"); err == nil || !strings.HasPrefix(err.Error(), "STALEFENCE") {
		t.Fatalf("late complete after the complete: %v", err)
	}
	r, err := do("IDEM.BEGIN", "sms", "msg-1", 1000, "hello")
	if err != nil || r[0] != "completed" || r[1].(int64) != f2 || r[2] != "sid=42" {
		t.Fatalf("begin after complete: %v %v", r, err)
	}
	// Release: the next begin runs again, with a higher fence; an empty payload is a payload.
	j, err := do("IDEM.BEGIN", "jobs", "nightly", 60000)
	if err != nil || j[0] != "begun" {
		t.Fatalf("job begin: %v %v", j, err)
	}
	if err := rdb.Do(ctx, "IDEM.RELEASE", "jobs", "nightly", j[1]).Err(); err != nil {
		t.Fatalf("release: %v", err)
	}
	if j2, err := do("IDEM.BEGIN", "jobs", "nightly", 60000, ""); err != nil || j2[0] != "begun" || j2[1].(int64) <= j[1].(int64) {
		t.Fatalf("begin after release: %v %v", j2, err)
	}
	// Nothing the refused calls named was claimed.
	if r, err := do("IDEM.BEGIN", "sms", "k", 1000); err != nil || r[0] != "begun" {
		t.Fatalf("begin of a key only refused calls named: %v %v", r, err)
	}
}
