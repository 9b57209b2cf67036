package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The failover scenario: how long writes stop when the leader dies. Three
// real `idemgate serve` processes on loopback, for each Raft timing
// profile: first a load phase (Clients writers for Load, the elections in
// it counted: a profile whose timeouts are too tight for a busy machine
// shows here), then Kills times: the leader SIGKILLed while writers keep
// writing through the Redis protocol to the two others, the time until
// the survivors name a new leader and until the first write sent after
// the kill is acknowledged, then the dead node restarted and caught up.

// FailoverProfile is one set of Raft timings, as the cluster file's raft:
// section sets them (0: left out, the node's default). The leader lease
// is half the heartbeat timeout (node.StoreConfig).
type FailoverProfile struct {
	Name      string        `json:"name"`
	Heartbeat time.Duration `json:"heartbeat_timeout"`
	Election  time.Duration `json:"election_timeout"`
}

// FailoverConfig configures the failover scenario.
type FailoverConfig struct {
	Bin      string // the idemgate binary to run the nodes with
	Dir      string // work directory (removed afterwards unless Keep)
	Keep     bool
	Profiles []FailoverProfile
	Kills    int           // leader kills per profile
	Clients  int           // writers of the load phase
	Load     time.Duration // the load phase (0: none)
	Progress io.Writer
}

// FailoverKill is one leader kill; times are milliseconds from the SIGKILL.
type FailoverKill struct {
	Killed    string  `json:"killed"`
	NewLeader string  `json:"new_leader"`
	ElectedMs float64 `json:"elected_ms"` // a survivor's /v1/cluster names the new leader
	// FirstWriteMs: the first write sent after the kill is acknowledged;
	// FirstWriteSentMs is when it was sent (a write sent soon after the
	// kill that waits in the node shows as an early send).
	FirstWriteMs     float64 `json:"first_write_ms"`
	FirstWriteSentMs float64 `json:"first_write_sent_ms"`
	FirstWriteVia    string  `json:"first_write_via"` // the node it was sent to: "leader" or "follower" (forwarded)
	// The writes in flight at the kill (sent before it, to any survivor):
	// how many, how many failed, and when the last of them was answered.
	InFlight       int     `json:"in_flight"`
	InFlightFailed int     `json:"in_flight_failed"`
	InFlightLastMs float64 `json:"in_flight_last_ms"`
	// Refused: writes sent after the kill and refused (an error reply or
	// a broken connection) before the first acknowledged one.
	Refused int `json:"refused_before_first"`
}

// FailoverProfileResult is one profile's figures.
type FailoverProfileResult struct {
	Profile       FailoverProfile `json:"profile"`
	Load          *ScalePhase     `json:"load,omitempty"`
	LoadElections int             `json:"load_elections"` // Raft terms begun during the load phase
	LoadChanges   int             `json:"load_leader_changes"`
	Kills         []FailoverKill  `json:"kills"`
	ElectedP50    float64         `json:"elected_p50_ms"`
	ElectedMax    float64         `json:"elected_max_ms"`
	FirstWriteP50 float64         `json:"first_write_p50_ms"`
	FirstWriteP90 float64         `json:"first_write_p90_ms"`
	FirstWriteMax float64         `json:"first_write_max_ms"`
	// HeldP50: over the kills whose writes in flight all succeeded (held
	// in a survivor, forwarded to the new leader), the median time from a
	// survivor naming the new leader to the last of them answered.
	HeldP50 float64 `json:"held_after_elected_p50_ms"`
}

// FailoverResult is what the failover scenario measured.
type FailoverResult struct {
	Profiles []FailoverProfileResult `json:"profiles"`
}

// failoverWriters is the writers per survivor during a kill.
const failoverWriters = 4

// Failover runs the failover scenario.
func Failover(cfg FailoverConfig) (res FailoverResult, err error) {
	if cfg.Kills <= 0 || len(cfg.Profiles) == 0 {
		return res, errors.New("bench: failover: want kills and at least one profile")
	}
	if cfg.Clients <= 0 {
		cfg.Clients = 64
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	var done func()
	if cfg.Dir, done, err = workDir(cfg.Dir, cfg.Keep, "idemgate-failover-"); err != nil {
		return res, err
	}
	defer done()
	for _, p := range cfg.Profiles {
		r, err := failoverProfile(cfg, p)
		if err != nil {
			return res, err
		}
		res.Profiles = append(res.Profiles, r)
	}
	return res, nil
}

// raftYAML is p's raft: line of the cluster file.
func (p FailoverProfile) raftYAML() string {
	var fields []string
	if p.Heartbeat > 0 {
		fields = append(fields, "heartbeat_timeout: "+p.Heartbeat.String())
	}
	if p.Election > 0 {
		fields = append(fields, "election_timeout: "+p.Election.String())
	}
	if len(fields) == 0 {
		return ""
	}
	return "raft: {" + strings.Join(fields, ", ") + "}\n"
}

func failoverProfile(cfg FailoverConfig, p FailoverProfile) (res FailoverProfileResult, err error) {
	res.Profile = p
	say := func(format string, args ...any) {
		fmt.Fprintf(cfg.Progress, "failover: %s: "+format+"\n", append([]any{p.Name}, args...)...)
	}
	dir := filepath.Join(cfg.Dir, p.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return res, err
	}
	c, err := newScaleCluster(dir, cfg.Bin, p.raftYAML())
	if err != nil {
		return res, err
	}
	defer c.stop()
	for i := range c.ids {
		if err := c.start(i, false); err != nil {
			return res, err
		}
	}
	if err := c.settle(time.Minute); err != nil {
		return res, err
	}
	if cfg.Load > 0 {
		before := c.maxTerm()
		changes := c.watchLeader()
		w := newRespLoad(c, cfg.Clients)
		load := w.run("writes", cfg.Load, nil)
		res.Load = &load
		res.LoadChanges = changes()
		res.LoadElections = int(c.maxTerm() - before)
		say("load: %d clients for %s: %s; elections %d, leader changes %d", cfg.Clients, cfg.Load, load, res.LoadElections, res.LoadChanges)
	}
	for k := 0; k < cfg.Kills; k++ {
		if err := c.settle(time.Minute); err != nil {
			return res, err
		}
		kill, err := c.killLeader()
		if err != nil {
			return res, err
		}
		res.Kills = append(res.Kills, kill)
		say("kill %d: %s killed; %s leader at +%.0f ms; first write at +%.0f ms (sent at +%.0f ms, to the %s, %d refused before it); %d in flight, %d failed, the last answered at +%.0f ms",
			k+1, kill.Killed, kill.NewLeader, kill.ElectedMs, kill.FirstWriteMs, kill.FirstWriteSentMs, kill.FirstWriteVia, kill.Refused,
			kill.InFlight, kill.InFlightFailed, kill.InFlightLastMs)
		for i, id := range c.ids {
			if id == kill.Killed {
				if err := c.start(i, false); err != nil {
					return res, err
				}
			}
		}
	}
	var elected, first []float64
	for _, k := range res.Kills {
		elected, first = append(elected, k.ElectedMs), append(first, k.FirstWriteMs)
	}
	var held []float64
	for _, k := range res.Kills {
		if k.InFlight > 0 && k.InFlightFailed == 0 && k.InFlightLastMs >= k.ElectedMs-50 {
			held = append(held, max(k.InFlightLastMs-k.ElectedMs, 0)) // the poll names the leader up to its interval late
		}
	}
	if len(held) > 0 {
		slices.Sort(held)
		res.HeldP50 = quantile(held, 0.5)
	}
	slices.Sort(elected)
	slices.Sort(first)
	res.ElectedP50, res.ElectedMax = quantile(elected, 0.5), elected[len(elected)-1]
	res.FirstWriteP50, res.FirstWriteP90, res.FirstWriteMax = quantile(first, 0.5), quantile(first, 0.9), first[len(first)-1]
	return res, nil
}

// quantile is the q-quantile of sorted xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	i := int(q*float64(len(xs))+0.999999) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// settle waits until every node is ready and all name one leader.
func (c *scaleCluster) settle(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for i := range c.ids {
		if err := c.waitReady(i, time.Until(deadline)); err != nil {
			return err
		}
	}
	for time.Now().Before(deadline) {
		leaders := map[string]bool{}
		for i := range c.ids {
			if v, err := c.view(i); err == nil {
				leaders[v.Leader] = true
			}
		}
		if len(leaders) == 1 && !leaders[""] {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("bench: failover: the nodes named no one leader within %s", limit)
}

// maxTerm is the highest idemgate_raft_term of the running nodes.
func (c *scaleCluster) maxTerm() float64 {
	var term float64
	for i := range c.ids {
		if c.procs[i] == nil {
			continue
		}
		if status, body, err := c.get(i, "/metrics"); err == nil && status == 200 {
			term = max(term, metricValue(body, "idemgate_raft_term"))
		}
	}
	return term
}

// failoverWrite is one write of the kill phase, times since the kill.
type failoverWrite struct {
	node       int
	sent, done time.Duration
	ok         bool
}

// killLeader SIGKILLs the leader while failoverWriters writers per
// survivor write, and measures until the first write sent after the kill
// is acknowledged.
func (c *scaleCluster) killLeader() (FailoverKill, error) {
	leader := c.leader()
	k := FailoverKill{Killed: c.ids[leader]}
	var mu sync.Mutex
	var writes []failoverWrite
	var killedAt time.Time // zero until the kill
	firstAfter := make(chan struct{})
	var firstOnce sync.Once
	stop := make(chan struct{})
	var wg sync.WaitGroup
	value := strings.Repeat("f", 100)
	var seq int
	for i := range c.ids {
		if i == leader {
			continue
		}
		for w := 0; w < failoverWriters; w++ {
			wg.Add(1)
			go func(node int) {
				defer wg.Done()
				var rc *respConn
				defer func() {
					if rc != nil {
						rc.close()
					}
				}()
				for {
					select {
					case <-stop:
						return
					default:
					}
					mu.Lock()
					seq++
					key := fmt.Sprintf("failover-%s-%d", k.Killed, seq)
					t0 := killedAt
					mu.Unlock()
					sent := time.Now()
					var err error
					if rc == nil {
						rc, err = dialRESP(c.resps[node])
					}
					if err == nil {
						_, _, err = rc.do("SET", key, value, "PX", "60000")
					}
					done := time.Now()
					if err != nil && rc != nil {
						rc.close()
						rc = nil
					}
					mu.Lock()
					if !killedAt.IsZero() {
						t0 = killedAt
						writes = append(writes, failoverWrite{node: node, sent: sent.Sub(t0), done: done.Sub(t0), ok: err == nil})
						if err == nil && sent.After(t0) {
							firstOnce.Do(func() { close(firstAfter) })
						}
					}
					mu.Unlock()
					if err != nil {
						time.Sleep(10 * time.Millisecond) // as a client backs off; no spinning
					}
				}
			}(i)
		}
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	time.Sleep(300 * time.Millisecond) // the writers connected and writing

	elected := make(chan struct{})
	mu.Lock()
	killedAt = time.Now()
	p := c.procs[leader]
	p.cmd.Process.Kill() // SIGKILL
	mu.Unlock()
	<-p.done
	c.procs[leader] = nil
	go func() {
		defer close(elected)
		for {
			for i := range c.ids {
				if i == leader {
					continue
				}
				if v, err := c.view(i); err == nil && v.Leader != "" && v.Leader != k.Killed {
					k.ElectedMs = millis(time.Since(killedAt))
					k.NewLeader = v.Leader
					return
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	select {
	case <-firstAfter:
	case <-time.After(time.Minute):
		return k, fmt.Errorf("bench: failover: no write acknowledged within a minute of killing %s", k.Killed)
	}
	select {
	case <-elected:
	case <-time.After(time.Minute):
		return k, fmt.Errorf("bench: failover: no new leader named within a minute of killing %s", k.Killed)
	}
	time.Sleep(200 * time.Millisecond) // the writes in flight at the kill end
	mu.Lock()
	defer mu.Unlock()
	first := -1
	for i, w := range writes {
		switch {
		case w.sent < 0:
			k.InFlight++
			if !w.ok {
				k.InFlightFailed++
			}
			k.InFlightLastMs = max(k.InFlightLastMs, millis(w.done))
		case w.ok && (first < 0 || w.done < writes[first].done):
			first = i
		}
	}
	if first < 0 {
		return k, errors.New("bench: failover: lost the first write")
	}
	fw := writes[first]
	k.FirstWriteMs, k.FirstWriteSentMs = millis(fw.done), millis(fw.sent)
	k.FirstWriteVia = "follower"
	if c.ids[fw.node] == k.NewLeader {
		k.FirstWriteVia = "leader"
	}
	for _, w := range writes {
		if w.sent >= 0 && !w.ok && w.done <= fw.done {
			k.Refused++
		}
	}
	return k, nil
}

func millis(d time.Duration) float64 { return float64(d) / 1e6 }

// WriteFailover prints the failover scenario's figures.
func WriteFailover(w io.Writer, r FailoverResult) {
	fmt.Fprintln(w, "failover: the leader of 3 nodes on loopback SIGKILLed while writers write (SET over the Redis protocol) to the other two")
	fmt.Fprintf(w, "  %-10s %-9s %-9s %-7s %6s %-24s %-30s %-14s %s\n", "profile", "heartbeat", "election", "lease", "kills", "elected p50 / max", "first write p50 / p90 / max", "held p50", "load: writes/s, p99, elections")
	for _, p := range r.Profiles {
		hb, el, lease := "default", "default", "default"
		if p.Profile.Heartbeat > 0 {
			hb, lease = p.Profile.Heartbeat.String(), (p.Profile.Heartbeat / 2).String()
		}
		if p.Profile.Election > 0 {
			el = p.Profile.Election.String()
		}
		load := "-"
		if p.Load != nil {
			load = fmt.Sprintf("%.0f/s, p99 %.1f ms, %d elections (%d errors)", p.Load.PerSecond, p.Load.P99Millis, p.LoadElections, p.Load.Errors)
		}
		fmt.Fprintf(w, "  %-10s %-9s %-9s %-7s %6d %-24s %-30s %-14s %s\n", p.Profile.Name, hb, el, lease, len(p.Kills),
			fmt.Sprintf("%.0f / %.0f ms", p.ElectedP50, p.ElectedMax),
			fmt.Sprintf("%.0f / %.0f / %.0f ms", p.FirstWriteP50, p.FirstWriteP90, p.FirstWriteMax),
			fmt.Sprintf("+%.0f ms", p.HeldP50), load)
	}
	fmt.Fprintln(w, "  (elected: a survivor names the new leader; first write: the first sent after the kill acknowledged; held: the writes in flight at the kill, held in a survivor, answered this long after the election)")
}
