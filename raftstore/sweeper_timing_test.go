package raftstore

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// sweeperCases are the sweeper settings the benchmarks compare: the
// defaults, and larger batches.
func sweeperCases() []struct {
	name string
	sc   ttl.SweeperConfig
} {
	big := ttl.DefaultSweeperConfig()
	big.BatchSize = 1024
	return []struct {
		name string
		sc   ttl.SweeperConfig
	}{{"default", ttl.DefaultSweeperConfig()}, {"batch=1024", big}}
}

// BenchmarkSweeperKeepsUp: clients (64, then 256: a full log entry of
// commands) write fresh keys to the leader of a 3-node cluster as fast as
// it commits them. Each key lives a millisecond, so every write is an
// index entry due at once: the sweeper must remove entries as fast as the
// cluster accepts them. The baseline, in the same run, is the same writes
// living an hour: the same index entries, none due, so no expiry work.
// Reported: writes/s, entries expired/s during the writes, and the largest
// backlog seen (sampled every 100ms) in each half of the run.
//
//	go test -run XXX -bench SweeperKeepsUp -benchtime 200000x ./raftstore
func BenchmarkSweeperKeepsUp(b *testing.B) {
	type keepsUpCase struct {
		name    string
		clients int
		life    time.Duration
		sc      ttl.SweeperConfig
	}
	var cases []keepsUpCase
	for _, clients := range []int{64, 256} {
		cases = append(cases, keepsUpCase{fmt.Sprintf("clients=%d/1h-lifetime(baseline)", clients), clients, time.Hour, ttl.DefaultSweeperConfig()})
		for _, sc := range sweeperCases() {
			cases = append(cases, keepsUpCase{fmt.Sprintf("clients=%d/1ms-lifetime/%s", clients, sc.name), clients, time.Millisecond, sc.sc})
		}
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			c := StartTestCluster(b, 3, func(cfg *Config) { cfg.Sweeper = tc.sc })
			s := c.Stores[c.WaitLeader(5*time.Second)]
			var first, second atomic.Int64
			stop := sampleBacklog(s, &first)
			expired0 := s.fsm.ExpiredCount(ttl.KindKV)
			b.ResetTimer()
			t0 := time.Now()
			writeKeys(b, s, tc.clients, b.N, func() time.Duration { return tc.life }, func(i int64) {
				if i == int64(b.N/2) { // the second half's samples apart
					stop()
					stop = sampleBacklog(s, &second)
				}
			})
			took := time.Since(t0)
			b.StopTimer()
			stop()
			expired := s.fsm.ExpiredCount(ttl.KindKV) - expired0
			b.ReportMetric(float64(b.N)/took.Seconds(), "writes/s")
			b.ReportMetric(float64(expired)/took.Seconds(), "expired/s")
			// Keeping up, the backlog swings between 0 and about a
			// second's writes (what arrives while the sweeper waits its
			// Interval) in both halves; falling behind, it grows.
			b.ReportMetric(float64(first.Load()), "backlog-max-1st-half")
			b.ReportMetric(float64(second.Load()), "backlog-max-2nd-half")
		})
	}
}

// BenchmarkSweeperDrain: b.N keys loaded to expire at one instant, with no
// other load: how fast the sweeper works off a backlog (the issue's "1M
// keys due at once"), timed from the first removal to the last.
//
//	go test -run XXX -bench SweeperDrain -benchtime 100000x ./raftstore
func BenchmarkSweeperDrain(b *testing.B) {
	for _, tc := range sweeperCases() {
		b.Run(tc.name, func(b *testing.B) {
			c := StartTestCluster(b, 3, func(cfg *Config) { cfg.Sweeper = tc.sc })
			s := c.Stores[c.WaitLeader(5*time.Second)]
			// Due together, once all are written: 2,500 writes/s at the
			// least (a shared, busy machine), and two seconds to spare.
			at := time.Now().Add(time.Duration(b.N)*400*time.Microsecond + 2*time.Second)
			writeKeys(b, s, 64, b.N, func() time.Duration { return max(time.Until(at), time.Millisecond) }, nil)
			if time.Now().After(at) {
				b.Fatalf("the load took past the instant its keys expire at")
			}
			expired0 := s.fsm.ExpiredCount(ttl.KindKV)
			probe := startProbe(s)
			b.ResetTimer()
			var first time.Time
			for s.fsm.ExpiredCount(ttl.KindKV)-expired0 < int64(b.N) {
				if first.IsZero() && s.fsm.ExpiredCount(ttl.KindKV) > expired0 {
					first = time.Now()
				}
				if time.Since(at) > 10*time.Minute {
					b.Fatalf("%d of %d expired after 10 minutes", s.fsm.ExpiredCount(ttl.KindKV)-expired0, b.N)
				}
				time.Sleep(time.Millisecond)
			}
			last := time.Now()
			b.StopTimer()
			lat := probe()
			b.ReportMetric(float64(b.N)/last.Sub(first).Seconds(), "expired/s")
			b.ReportMetric(lat.p99(time.Time{}, at).Seconds()*1e3, "p99-before-ms")
			b.ReportMetric(lat.p99(first, last).Seconds()*1e3, "p99-during-ms")
		})
	}
}

// writeKeys sets n fresh keys on s from clients goroutines, each key living
// life() (0: for ever); each is numbered, 1 to n, and passed to at (nil:
// none) before it is written.
func writeKeys(b *testing.B, s *Store, clients, n int, life func() time.Duration, at func(int64)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	prefix := fmt.Sprintf("w%d-", time.Now().UnixNano())
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if at != nil {
					at(i)
				}
				if _, err := s.ApplyKV(context.Background(), command.KVSetCommand(command.KVSetRequest{Key: []byte(prefix + fmt.Sprint(i)), Value: []byte("v"), TTL: life(), Mode: command.SetNX})); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// sampleBacklog keeps in most the largest count of due entries seen on s,
// every 100ms, until the function it returns is called.
func sampleBacklog(s *Store, most *atomic.Int64) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if n, err := s.CountDue(time.Now(), 1<<22); err == nil && int64(n) > most.Load() {
				most.Store(int64(n))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// latencies are a probe's writes: when each started, and how long it took.
type latencies []struct {
	at   time.Time
	took time.Duration
}

// p99 is the 99th percentile of the writes started from from to to.
func (l latencies) p99(from, to time.Time) time.Duration {
	var d []time.Duration
	for _, x := range l {
		if !x.at.Before(from) && x.at.Before(to) {
			d = append(d, x.took)
		}
	}
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)*99/100]
}

// startProbe writes fresh keys on s from one client, one after another,
// until the function it returns is called; that returns their latencies.
func startProbe(s *Store) func() latencies {
	done := make(chan struct{})
	var out latencies
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			t0 := time.Now()
			if _, err := s.ApplyKV(context.Background(), command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprintf("probe-%d", i)), Value: []byte("v"), Mode: command.SetNX})); err == nil {
				out = append(out, struct {
					at   time.Time
					took time.Duration
				}{t0, time.Since(t0)})
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return func() latencies { close(done); wg.Wait(); return out }
}
