package tokens

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/idemgate/idemgate/internal/testcluster"
)

func TestIssueConsume(t *testing.T) {
	c := testcluster.Start(t, 1, nil)
	svc := New(c.Stores[0], time.Minute)
	ctx := context.Background()
	tok, err := svc.Issue(ctx, "pay", 0)
	if err != nil {
		t.Fatal(err)
	}
	u, err := uuid.Parse(tok.Value)
	if err != nil || u.Version() != 4 {
		t.Fatalf("token %q is not a uuid v4", tok.Value)
	}
	if d := time.Until(tok.ExpiresAt); d < 50*time.Second || d > time.Minute+time.Second {
		t.Fatalf("default ttl gave expiry in %s", d)
	}
	if err := svc.Consume(ctx, "other", tok.Value); !errors.Is(err, ErrUsed) {
		t.Fatalf("consume in another scope = %v, want ErrUsed", err)
	}
	if err := svc.Consume(ctx, "pay", tok.Value); err != nil {
		t.Fatalf("first consume = %v", err)
	}
	if err := svc.Consume(ctx, "pay", tok.Value); !errors.Is(err, ErrUsed) {
		t.Fatalf("second consume = %v, want ErrUsed", err)
	}
	short, _ := svc.Issue(ctx, "pay", 50*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	if err := svc.Consume(ctx, "pay", short.Value); !errors.Is(err, ErrUsed) {
		t.Fatalf("expired token consume = %v, want ErrUsed", err)
	}
}

func TestValidation(t *testing.T) {
	svc := New(nil, time.Minute) // never reaches the store
	ctx := context.Background()
	for _, scope := range []string{"", "a b", "x\x00y", string(make([]byte, 65))} {
		if _, err := svc.Issue(ctx, scope, 0); !errors.Is(err, ErrBadScope) {
			t.Errorf("Issue(scope %q) = %v, want ErrBadScope", scope, err)
		}
	}
	for _, ttl := range []time.Duration{-time.Second, MaxTTL + 1} {
		if _, err := svc.Issue(ctx, "pay", ttl); !errors.Is(err, ErrBadTTL) {
			t.Errorf("Issue(ttl %s) = %v, want ErrBadTTL", ttl, err)
		}
	}
	for _, tok := range []string{"", "nope", "6f1c1b2e-1111-4222-8333-44445555666", "6f1c1b2e11114222833344445555666600000"} {
		if err := svc.Consume(ctx, "pay", tok); !errors.Is(err, ErrBadToken) {
			t.Errorf("Consume(%q) = %v, want ErrBadToken", tok, err)
		}
	}
}

// TestMetricScopesBounded: scopes a caller makes up are counted as
// "other", however many there are; the named ones keep their label.
func TestMetricScopesBounded(t *testing.T) {
	c := testcluster.Start(t, 1, nil)
	svc := New(c.Stores[0], time.Minute)
	svc.SetNamedScopes([]string{"pay"})
	ctx := context.Background()
	for i := 0; i < 200; i++ {
		tok, err := svc.Issue(ctx, fmt.Sprintf("made-up-%d", i), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Consume(ctx, tok.Scope, tok.Value); err != nil {
			t.Fatal(err)
		}
	}
	tok, err := svc.Issue(ctx, "pay", 0)
	if err != nil || svc.Consume(ctx, "pay", tok.Value) != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(svc.issued); n != 2 {
		t.Fatalf("issued has %d series after 201 scopes, want 2 (pay, other)", n)
	}
	if got := testutil.ToFloat64(svc.issued.WithLabelValues(OtherScope)); got != 200 {
		t.Fatalf("other = %v, want 200", got)
	}
	if got := testutil.ToFloat64(svc.consumed.WithLabelValues("pay", "ok")); got != 1 {
		t.Fatalf("pay consumed ok = %v, want 1", got)
	}
}

// TestMetricSeriesExistFromStart: before any token is issued, the issued
// counter has a series at 0 for every named scope and "other", and the
// consumed counter one for each of those with each result (ok, used), so
// an alert or panel on increase() sees the first event.
func TestMetricSeriesExistFromStart(t *testing.T) {
	svc := New(nil, time.Minute) // never reaches the store
	svc.SetNamedScopes([]string{"pay", "signup"})
	reg := prometheus.NewPedanticRegistry()
	if err := svc.Register(reg); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			if v := m.GetCounter().GetValue(); v != 0 {
				t.Errorf("%s{%s} = %v before any event", f.GetName(), strings.Join(ls, ","), v)
			}
			got[f.GetName()] = append(got[f.GetName()], strings.Join(ls, ","))
		}
	}
	want := map[string][]string{
		"idemgate_tokens_issued_total": {"scope=other", "scope=pay", "scope=signup"},
		"idemgate_tokens_consumed_total": {"result=ok,scope=other", "result=ok,scope=pay", "result=ok,scope=signup",
			"result=used,scope=other", "result=used,scope=pay", "result=used,scope=signup"},
	}
	for name, w := range want {
		g := got[name]
		slices.Sort(g)
		if !slices.Equal(g, w) {
			t.Errorf("%s: series %v, want %v", name, g, w)
		}
	}
}
