package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/bench"
)

// TestBenchFailoverSmall runs the failover scenario end to end, small:
// three real idemgate processes with the timings given, a short load
// phase without errors, two leader kills each measured (a new leader that
// is not the killed node, named before or at the first write
// acknowledged after the kill, which was sent after it), and the report
// printing the profile's row.
func TestBenchFailoverSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes and kills their leader twice")
	}
	var r bench.FailoverResult
	stdout := runBenchJSON(t, &r, "--scenario", "failover", "--kills", "2", "--profiles", "quick=300ms/300ms",
		"--load", "1s", "--clients", "4")
	if len(r.Profiles) != 1 {
		t.Fatalf("%d profiles, want 1: %+v", len(r.Profiles), r)
	}
	p := r.Profiles[0]
	if p.Profile != (bench.FailoverProfile{Name: "quick", Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond}) {
		t.Errorf("profile %+v", p.Profile)
	}
	if p.Load == nil || p.Load.Requests == 0 || p.Load.Errors != 0 {
		t.Errorf("load %+v: want requests and no errors", p.Load)
	}
	if len(p.Kills) != 2 {
		t.Fatalf("%d kills, want 2", len(p.Kills))
	}
	for i, k := range p.Kills {
		switch {
		case k.Killed == "" || k.NewLeader == "" || k.NewLeader == k.Killed:
			t.Errorf("kill %d: killed %q, new leader %q", i+1, k.Killed, k.NewLeader)
		case k.FirstWriteSentMs < 0 || k.FirstWriteMs < k.FirstWriteSentMs || k.ElectedMs <= 0 || k.FirstWriteMs <= 0:
			t.Errorf("kill %d: elected at %.1f ms, first write sent at %.1f, answered at %.1f", i+1, k.ElectedMs, k.FirstWriteSentMs, k.FirstWriteMs)
		case k.FirstWriteVia != "leader" && k.FirstWriteVia != "follower":
			t.Errorf("kill %d: first write via %q", i+1, k.FirstWriteVia)
		}
	}
	if p.FirstWriteMax < p.FirstWriteP50 || p.FirstWriteMax <= 0 {
		t.Errorf("first write p50 %.1f, max %.1f", p.FirstWriteP50, p.FirstWriteMax)
	}
	if !strings.Contains(stdout, "quick      300ms     300ms     150ms") {
		t.Errorf("the report lacks the profile's row:\n%s", stdout)
	}
}
