package api

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testcluster"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// readyLoadRun is how long TestReadyUnderLoad writes: 60 s, or
// IDEMGATE_READY_LOAD (a Go duration) when set. .ci/run runs it on its
// own, after the other tests: a minute of load beside another package's
// clusters on two cores would measure the machine, not the node.
func readyLoadRun(t *testing.T) time.Duration {
	d := 60 * time.Second
	if v := os.Getenv("IDEMGATE_READY_LOAD"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			t.Fatalf("IDEMGATE_READY_LOAD=%q: want a positive Go duration", v)
		}
	}
	return d
}

// lagSamples are one node's apply lags, sampled every few milliseconds.
type lagSamples struct {
	entries  []uint64        // commit index - applied index
	behind   []uint64        // the leader's applied index - this node's (followers)
	applyLag []time.Duration // from first seeing an index committed to having applied it
}

func quantiles[T uint64 | time.Duration](v []T) string {
	if len(v) == 0 {
		return "none"
	}
	s := slices.Clone(v)
	slices.Sort(s)
	at := func(q float64) T { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return fmt.Sprintf("p50 %v p99 %v p99.9 %v max %v (n=%d)", at(0.5), at(0.99), at(0.999), s[len(s)-1], len(s))
}

// sampleLags records node i's lags until ctx ends.
func sampleLags(ctx context.Context, c *testcluster.Cluster, i int, out *lagSamples) {
	type seen struct {
		index uint64
		at    time.Time
	}
	var pending []seen
	var last uint64
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for ctx.Err() == nil {
		<-t.C
		s := c.Store(i)
		commit, applied := s.Indexes()
		handed := s.Raft().AppliedIndex() // no-ops reach Raft's applied index only
		now := time.Now()
		if commit > last {
			pending = append(pending, seen{commit, now})
			last = commit
		}
		for len(pending) > 0 && (applied >= pending[0].index || handed >= pending[0].index && applied+4 >= pending[0].index) {
			out.applyLag = append(out.applyLag, now.Sub(pending[0].at))
			pending = pending[1:]
		}
		if commit >= applied {
			out.entries = append(out.entries, commit-applied)
		}
		if id, _ := s.Leader(); id != "" && id != s.NodeID() {
			for j := range c.Cfgs {
				if c.Cfgs[j].NodeID == id {
					if _, la := c.Store(j).Indexes(); la >= applied {
						out.behind = append(out.behind, la-applied)
					}
				}
			}
		}
	}
}

// TestReadyUnderLoad: a healthy 3-node cluster under about 1,000 writes a
// second (spread over the three nodes, two thirds forwarded) answers
// /readyz 200, and idemgate_ready 1, on every node, the leader included:
// fewer than 1 in 1,000 polls may answer otherwise. It logs the apply lags
// it sampled meanwhile (docs/operations.md's readyz bound is chosen from them).
func TestReadyUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of load on a 3-node cluster")
	}
	run := readyLoadRun(t)
	theContract.pause(t) // its polls measure the node, not the OpenAPI check
	ac := startAPICluster(t, 3)
	ac.c.WaitLeader(10 * time.Second)
	for i := range ac.urls {
		waitReady(t, ac.urls[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()

	// The writers: a token a millisecond, taken by 96 writers spread over
	// the nodes.
	var writes, failed atomic.Int64
	tokens := make(chan struct{}, 64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			<-tick.C
			select {
			case tokens <- struct{}{}:
			default: // the writers are behind: the rate is what they manage
			}
		}
	}()
	for w := 0; w < 96; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := ac.c.Store(w % 3)
			for n := 0; ; n++ {
				select {
				case <-ctx.Done():
					return
				case <-tokens:
				}
				wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := s.ApplyKV(wctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprintf("load-%d-%d", w, n%500)), Value: []byte("v")}))
				wcancel()
				if err != nil {
					failed.Add(1)
				} else {
					writes.Add(1)
				}
			}
		}()
	}

	// The pollers: /readyz on every node every 10 ms or so, and
	// idemgate_ready every 20th poll.
	type counts struct {
		polls, notReady, scrapes, gaugeZero int
		reasons                             map[string]int
	}
	got := make([]counts, 3)
	lags := make([]lagSamples, 3)
	for i := range ac.urls {
		got[i].reasons = map[string]int{}
		wg.Add(2)
		go func() { defer wg.Done(); sampleLags(ctx, ac.c, i, &lags[i]) }()
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				r, err := testsupport.Do("GET", ac.urls[i]+"/readyz", "")
				got[i].polls++
				if err != nil || r.Status != 200 {
					got[i].notReady++
					got[i].reasons[fmt.Sprint(r.Body, err)]++
				}
				if n%20 == 0 {
					got[i].scrapes++
					if g, err := readyGauge(ac.urls[i]); err != nil || g != 1 {
						got[i].gaugeZero++
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	wg.Wait()

	t.Logf("%d writes in %s (%.0f/s), %d failed", writes.Load(), run, float64(writes.Load())/run.Seconds(), failed.Load())
	for i, g := range got {
		id := ac.c.Cfgs[i].NodeID
		t.Logf("%s: %d readyz polls, %d not ready; %d scrapes, %d with idemgate_ready 0", id, g.polls, g.notReady, g.scrapes, g.gaugeZero)
		t.Logf("%s: commit-applied entries %s", id, quantiles(lags[i].entries))
		t.Logf("%s: leader applied-mine entries %s", id, quantiles(lags[i].behind))
		t.Logf("%s: committed-to-applied time %s", id, quantiles(lags[i].applyLag))
		for why, n := range g.reasons {
			t.Logf("%s: %d× %s", id, n, why)
		}
		if g.polls < 100 || g.scrapes < 10 {
			t.Errorf("%s: only %d polls and %d scrapes: the run says nothing", id, g.polls, g.scrapes)
		}
		if g.notReady*1000 >= g.polls || g.gaugeZero*1000 >= g.scrapes {
			t.Errorf("%s: readyz not ready in %d of %d polls, idemgate_ready 0 in %d of %d scrapes, on a healthy cluster: want under 1 in 1,000",
				id, g.notReady, g.polls, g.gaugeZero, g.scrapes)
		}
	}
	if writes.Load() < int64(run.Seconds())*100 {
		t.Errorf("only %d writes in %s: not the load this test is about", writes.Load(), run)
	}
}

// readyGauge is idemgate_ready on the node at url (-1 when absent).
func readyGauge(url string) (float64, error) {
	m, err := testsupport.Do("GET", url+"/metrics", "")
	if err != nil {
		return 0, err
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader([]byte(m.Body)))
	if err != nil {
		return 0, err
	}
	if f := families["idemgate_ready"]; f != nil && len(f.Metric) == 1 {
		return f.Metric[0].GetGauge().GetValue(), nil
	}
	return -1, nil
}
