package bench

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// respLoad writes fresh keys over the Redis protocol, one command in
// flight per client (a latency measurement), or pipelined (a bulk load),
// to the nodes of a scale cluster in turn.
type respLoad struct {
	addrs   []string
	clients int
	seq     atomic.Int64 // key numbers, unique over the whole run
	value   string

	mu      sync.Mutex
	base    time.Time
	samples []sample // of the last run
}

// sample is one request: when it started (since base) and how long it took
// (negative: it failed).
type sample struct {
	at, took time.Duration
}

func newRespLoad(c *scaleCluster, clients int) *respLoad {
	return &respLoad{addrs: c.resps, clients: clients, value: strings.Repeat("w", 100)}
}

// run writes with every client for d, and for as long as during (if any,
// started with the clients) runs; it returns the figures of the whole run
// and keeps its samples for window.
func (l *respLoad) run(name string, d time.Duration, during func()) ScalePhase {
	l.mu.Lock()
	l.base, l.samples = time.Now(), l.samples[:0]
	l.mu.Unlock()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < l.clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			l.client(l.addrs[i%len(l.addrs)], stop)
		}(i)
	}
	done := make(chan struct{})
	go func() {
		if during != nil {
			during()
		}
		close(done)
	}()
	timer := time.NewTimer(d)
	<-timer.C
	<-done
	close(stop)
	wg.Wait()
	return l.window(name, l.base, time.Now())
}

func (l *respLoad) client(addr string, stop <-chan struct{}) {
	var local []sample
	defer func() {
		l.mu.Lock()
		l.samples = append(l.samples, local...)
		l.mu.Unlock()
	}()
	var rc *respConn
	for {
		select {
		case <-stop:
			if rc != nil {
				rc.c.Close()
			}
			return
		default:
		}
		start := time.Now()
		var err error
		if rc == nil {
			rc, err = dialRESP(addr)
		}
		if err == nil {
			_, _, err = rc.do("SET", fmt.Sprintf("w-%010d", l.seq.Add(1)), l.value, "PX", "86400000")
		}
		took := time.Since(start)
		if err != nil {
			took = -took
			if rc != nil {
				rc.c.Close()
				rc = nil
			}
			time.Sleep(10 * time.Millisecond) // a node restarting: do not spin
		}
		local = append(local, sample{at: start.Sub(l.base), took: took})
	}
}

// window is the figures of the last run's requests that started between
// from and to.
func (l *respLoad) window(name string, from, to time.Time) ScalePhase {
	l.mu.Lock()
	defer l.mu.Unlock()
	lo, hi := from.Sub(l.base), to.Sub(l.base)
	var h Histogram // the bench's own percentiles, as every scenario reports them
	p := ScalePhase{Name: name, WindowSecs: (hi - lo).Seconds()}
	for _, s := range l.samples {
		if s.at < lo || s.at > hi {
			continue
		}
		p.Requests++
		if s.took < 0 {
			p.Errors++
			continue
		}
		h.Record(s.took)
	}
	if h.Count() == 0 || hi <= lo {
		return p
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	p.PerSecond = float64(h.Count()) / (hi - lo).Seconds()
	p.P50Millis = ms(h.Percentile(0.5))
	p.P99Millis = ms(h.Percentile(0.99))
	p.MaxMillis = ms(h.Max())
	return p
}

// pipelined writes n keys prefix-%010d, all expiring at due, over eight
// connections with 256 commands in flight on each.
func (l *respLoad) pipelined(prefix string, n int, due time.Time) error {
	const conns, depth = 8, 256
	var next atomic.Int64
	at := strconv.FormatInt(due.UnixMilli(), 10)
	errs := make(chan error, conns)
	for c := 0; c < conns; c++ {
		go func(addr string) {
			errs <- func() error {
				rc, err := dialRESP(addr)
				if err != nil {
					return err
				}
				defer rc.c.Close()
				for {
					first := next.Add(depth) - depth
					if first >= int64(n) {
						return nil
					}
					last := min(first+depth, int64(n))
					rc.c.SetDeadline(time.Now().Add(time.Minute))
					for k := first; k < last; k++ {
						rc.send("SET", fmt.Sprintf("%s-%010d", prefix, k), l.value, "PXAT", at)
					}
					if err := rc.w.Flush(); err != nil {
						return err
					}
					for k := first; k < last; k++ {
						if _, _, err := rc.reply(); err != nil {
							return err
						}
					}
				}
			}()
		}(l.addrs[c%len(l.addrs)])
	}
	var err error
	for c := 0; c < conns; c++ {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	return err
}
