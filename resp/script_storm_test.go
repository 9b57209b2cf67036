package resp

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"
)

// TestScriptStormKeepsLeader: 64 connections each running a script that
// never ends, on the leader of a 3-node cluster, take no more CPU than the
// node's cap on script runs: raft's heartbeats still get theirs, so no node
// changes term or sees another leader, and a write sent during the storm
// is answered. The scripts over the cap wait, then are refused with
// TRYAGAIN (nothing run), or run and are killed by the time limit.
func TestScriptStormKeepsLeader(t *testing.T) {
	if raceDetector {
		// Raft's goroutines run several times slower: on a shared 2-core
		// machine, with one core given to a script, the test cluster's
		// 400 ms timeouts failed even for a single looping script.
		t.Skip("a measure of CPU for raft; the race detector takes most of it")
	}
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	obs := make(chan raft.Observation, 1024)
	terms := make([]uint64, len(tc.rc.Stores))
	for i, s := range tc.rc.Stores {
		terms[i] = s.Raft().CurrentTerm()
		o := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
			_, leaderChange := o.Data.(raft.LeaderObservation)
			return leaderChange
		})
		s.Raft().RegisterObserver(o)
		t.Cleanup(func() { s.Raft().DeregisterObserver(o) })
	}
	ctx := ctxT(t, 60*time.Second)
	const loops = 64
	replies := make(chan string, loops)
	var started, done sync.WaitGroup
	started.Add(loops)
	go2 := make(chan struct{})
	for range loops {
		done.Add(1)
		c := client(t, tc.addrs[leader], func(o *redis.Options) { o.ReadTimeout = 30 * time.Second; o.PoolSize = 1 })
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		go func() {
			defer done.Done()
			started.Done()
			<-go2
			err := c.Eval(ctx, "while true do end", nil).Err()
			replies <- errText(err)
		}()
	}
	started.Wait()
	close(go2)
	time.Sleep(500 * time.Millisecond) // not an assertion: lets the storm take the CPU before the write
	w := client(t, tc.addrs[leader])
	writeErr := w.Set(ctx, "storm:write", "1", 0).Err()
	done.Wait()
	close(replies)
	counts := map[string]int{}
	for r := range replies {
		counts[r]++
	}
	t.Logf("replies: %v", counts)
	if writeErr != nil {
		t.Errorf("a write during the storm: %v, want OK", writeErr)
	}
	for i, s := range tc.rc.Stores {
		if got := s.Raft().CurrentTerm(); got != terms[i] {
			t.Errorf("node %d: term %d after the storm, %d before", i, got, terms[i])
		}
	}
	if n := len(obs); n != 0 {
		t.Errorf("%d leader changes observed during the storm, want 0", n)
	}
	cfg := tc.srv[leader].cfg
	killed := fmt.Sprintf("ERR Script killed: script ran longer than its time limit (limit %s); nothing it wrote was applied", cfg.Script.Timeout)
	busy := fmt.Sprintf(msgScriptsBusy, cfg.ScriptRuns, cfg.ScriptQueueWait)
	for r, n := range counts {
		if r != killed && r != busy {
			t.Errorf("%d looping scripts answered %q, want %q or %q", n, r, killed, busy)
		}
	}
	if counts[killed] < cfg.ScriptRuns || counts[killed] > loops-cfg.ScriptRuns {
		t.Errorf("%d scripts ran to their limit, want at least the %d the node runs at once, and some refused", counts[killed], cfg.ScriptRuns)
	}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
