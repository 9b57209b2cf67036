package bench

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// RunConfig bounds one measurement: Clients closed-loop clients, until
// Duration has passed or Requests operations were made, whichever is first
// (both bounded: a zero Duration means 10 s).
type RunConfig struct {
	Name     string
	Clients  int
	Duration time.Duration
	Requests int64
	Progress io.Writer
}

// Op is one operation of a scenario, by client c; seq numbers operations
// across clients from 0. An Op that returns errStop did nothing: its client
// stops, and nothing is counted.
type Op func(c int, seq int64) error

// errStop ends a client's loop early: the scenario has nothing left for it.
var errStop = errors.New("bench: nothing left to do")

// Stats is one measurement.
type Stats struct {
	Name       string        `json:"name"`
	Baseline   bool          `json:"baseline,omitempty"`
	Clients    int           `json:"clients"`
	Ops        int64         `json:"ops"`
	Errors     int64         `json:"errors"`
	FirstError string        `json:"first_error,omitempty"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	OpsPerSec  float64       `json:"ops_per_sec"`
	P50        time.Duration `json:"p50_ns"`
	P90        time.Duration `json:"p90_ns"`
	P99        time.Duration `json:"p99_ns"`
	Max        time.Duration `json:"max_ns"`
	// Check is the scenario's exactly-once verdict ("" when it has none).
	Check   string `json:"check,omitempty"`
	CheckOK bool   `json:"check_ok"`
	Skipped string `json:"skipped,omitempty"`
	// System and Scenario say what was measured ("idemgate", "redis",
	// "etcd"; "kv", "contention", ...), for a CI job that compares runs.
	System   string `json:"system,omitempty"`
	Scenario string `json:"scenario,omitempty"`
	// Lock and Sale carry the contention and flash-sale figures; for those
	// scenarios P50-Max are the time to acquire a lock and to answer a
	// consume.
	Lock *LockStats `json:"lock,omitempty"`
	Sale *SaleStats `json:"sale,omitempty"`
	// CPU is the CPU per operation (contention: per acquisition; once: per
	// pair), where the scenario measures it.
	CPU *CPUCost `json:"cpu_per_op,omitempty"`
}

// Run measures op under cfg.
func Run(cfg RunConfig, op Op) Stats {
	if cfg.Clients <= 0 {
		cfg.Clients = 1
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	var next, errs atomic.Int64
	var firstErr atomic.Value
	hists := make([]Histogram, cfg.Clients)
	stop := time.Now().Add(cfg.Duration)
	done := make(chan struct{})
	var progressWG sync.WaitGroup
	if cfg.Progress != nil {
		progressWG.Add(1)
		go func() {
			defer progressWG.Done()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					fmt.Fprintf(cfg.Progress, "  %-28s %8d ops  %6d errors\n", cfg.Name, next.Load(), errs.Load())
				}
			}
		}()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < cfg.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			h := &hists[c]
			for time.Now().Before(stop) {
				seq := next.Add(1) - 1
				if cfg.Requests > 0 && seq >= cfg.Requests {
					return
				}
				t0 := time.Now()
				if err := op(c, seq); err != nil {
					if errors.Is(err, errStop) {
						return
					}
					if errs.Add(1) == 1 {
						firstErr.Store(err.Error())
					}
					continue
				}
				h.Record(time.Since(t0))
			}
		}(c)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(done)
	progressWG.Wait()
	var all Histogram
	for i := range hists {
		all.Merge(&hists[i])
	}
	s := Stats{Name: cfg.Name, Clients: cfg.Clients, Ops: int64(all.Count()), Errors: errs.Load(), Elapsed: elapsed,
		OpsPerSec: float64(all.Count()) / elapsed.Seconds(),
		P50:       all.Percentile(0.50), P90: all.Percentile(0.90), P99: all.Percentile(0.99), Max: all.Max()}
	if msg, ok := firstErr.Load().(string); ok {
		s.FirstError = msg
	}
	return s
}
