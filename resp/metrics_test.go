package resp

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCommandSeriesExistFromStart: a fresh listener's registry has
// idemgate_resp_commands_total at 0 for every command of the table (ok and
// error) and for the refused names (error), before any connection; and
// counting commands adds no series beyond them, whatever name a client
// sends.
func TestCommandSeriesExistFromStart(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	s, err := New(cfg, nil, nil, nil, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	want := 2*len(commands) + 2 + len(unsupported)
	if len(commands) < 30 {
		t.Fatalf("the command table has %d commands", len(commands))
	}
	if n := testutil.CollectAndCount(s.m.commands); n != want {
		t.Fatalf("a fresh listener has %d series of idemgate_resp_commands_total, want %d", n, want)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "idemgate_resp_commands_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetValue())
			}
			have[strings.Join(ls, "/")] = m.GetCounter().GetValue()
		}
	}
	for _, series := range []string{"set/ok", "set/error", "get/ok", "exec/error", "evalsha/ok", "unknown/error", "protocol/error", "subscribe/error"} {
		if v, ok := have[series]; !ok || v != 0 {
			t.Errorf("a fresh registry's %s: %v (present %v), want 0", series, v, ok)
		}
	}
	// What observe is given once a listener runs: every name is one of
	// the initialised series.
	for _, name := range []string{"set", "unknown", "protocol", "subscribe"} {
		s.m.observe(name, true, s.start)
	}
	s.m.observe("get", false, s.start)
	if n := testutil.CollectAndCount(s.m.commands); n != want {
		t.Errorf("after counting commands: %d series, want still %d", n, want)
	}
	if got := testutil.ToFloat64(s.m.commands.WithLabelValues("get", "ok")); got != 1 {
		t.Errorf("get/ok = %v, want 1", got)
	}
}
