package raftstore

import (
	"log/slog"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestEventsLogged: a real 3-node cluster logs each transition once, on the
// nodes that see it: ready, a peer lost and found (by the members' probes,
// beside Raft's own error line through the adapter), a member removed and
// added, not ready with its reason and ready again.
func TestEventsLogged(t *testing.T) {
	logs := map[string]*testsupport.Logs{}
	c := StartTestCluster(t, 3, func(cfg *Config) {
		l := &testsupport.Logs{}
		logs[cfg.NodeID] = l
		cfg.Logger = slog.New(slog.NewJSONHandler(l, nil))
	})
	ids := []string{c.Cfgs[0].NodeID, c.Cfgs[1].NodeID, c.Cfgs[2].NodeID}
	waitLog := func(node, msg string, attrs ...string) {
		t.Helper()
		testsupport.WaitFor(t, node+" logging "+msg+" "+join(attrs), 20*time.Second, func() bool {
			return logs[node].Count(msg, attrs...) > 0
		})
	}
	for _, id := range ids {
		waitLog(id, "ready")
	}
	leader := c.WaitLeader(5 * time.Second)
	victim, other := (leader+1)%3, (leader+2)%3
	L, V, O := ids[leader], ids[victim], ids[other]

	c.Stop(victim)
	waitLog(L, "peer unreachable", "peer", V)
	waitLog(L, "failed to heartbeat to", "logger", "raft", "level", "ERROR")
	c.Start(victim)
	waitLog(L, "peer reachable", "peer", V)

	ctx := ctxT(t, 30*time.Second)
	if err := c.Store(other).RemoveServer(ctx, V, false); err != nil {
		t.Fatal(err)
	}
	waitLog(L, "member removed", "member", V)
	waitLog(O, "member removed", "member", V) // a follower learns it from the log
	c.Stop(victim)
	c.Start(victim)
	if err := c.Store(other).AddVoter(ctx, V, c.Cfgs[victim].RaftBind); err != nil {
		t.Fatal(err)
	}
	waitLog(L, "member added", "member", V, "voter", "true")
	waitLog(O, "member added", "member", V, "voter", "true")
	for _, id := range []string{L, O} {
		for _, msg := range []string{"member removed", "member added"} {
			if n := logs[id].Count(msg, "member", V); n != 1 {
				t.Errorf("%s logged %q for %s %d times, want once", id, msg, V, n)
			}
		}
	}

	s := c.Store(other)
	readyBefore := logs[O].Count("ready")
	s.diskLow.Store(true)
	waitLog(O, "not ready", "reason", "disk low", "level", "WARN")
	s.diskLow.Store(false)
	testsupport.WaitFor(t, O+" ready again", 10*time.Second, func() bool { return logs[O].Count("ready") > readyBefore })
	if n := logs[O].Count("not ready", "reason", "disk low"); n != 1 {
		t.Errorf("%s logged not ready (disk low) %d times, want once", O, n)
	}
	for _, id := range ids {
		if _, err := logs[id].JSON(); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
}

func join(attrs []string) string {
	out := ""
	for i := 0; i+1 < len(attrs); i += 2 {
		out += attrs[i] + "=" + attrs[i+1] + " "
	}
	return out
}
