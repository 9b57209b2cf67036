package raftstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/datadir"
	"github.com/idemgate/idemgate/internal/faults"
	"github.com/idemgate/idemgate/internal/history"
	"github.com/idemgate/idemgate/storeapi"
)

// A T1 history (docs/reliability.md): 3 in-process nodes on real raft-boltdb and
// bbolt, Raft traffic through one proxy per directed link, concurrent
// clients on all nodes over a small keyspace, one fault in the middle of
// the run, then heal. Every operation is recorded; those whose answer was
// lost are settled from the replicated request-id store; porcupine checks
// the whole (a timeout counts as a failure), and the replicas must hold
// equal state within 10 s of healing.

type recorded struct {
	op      porcupine.Operation
	reqID   command.ReqID
	unknown bool
}

type historyRun struct {
	t       *testing.T
	c       *TestCluster
	net     *faults.Net
	mu      sync.Mutex
	ops     []recorded
	start   time.Time
	version map[string]uint64 // last version each key was seen with, for CAS
}

func newHistoryRun(t *testing.T, tweak func(*Config)) *historyRun {
	h := &historyRun{t: t, net: faults.NewNet(), version: map[string]uint64{}}
	h.c = StartTestCluster(t, 3, func(cfg *Config) {
		for _, p := range cfg.Peers {
			h.net.Add(p.ID, p.RaftAddr)
		}
		cfg.AddressProvider = h.net.Provider(cfg.NodeID)
		cfg.ApplyTimeout = 2 * time.Second
		if tweak != nil {
			tweak(cfg)
		}
	})
	t.Cleanup(h.net.Close)
	h.start = time.Now()
	return h
}

func (h *historyRun) now() int64 { return int64(time.Since(h.start)) }

// client runs random operations on random running nodes until stop.
func (h *historyRun) client(id int, keys []string, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		s := h.c.Store(rng.IntN(len(h.c.Cfgs)))
		if s == nil {
			continue
		}
		key := keys[rng.IntN(len(keys))]
		in := history.Input{Key: key, Value: fmt.Sprintf("c%d-%d", id, n)}
		switch r := rng.IntN(10); {
		case r < 3:
			in.Kind = history.SetNX
			if rng.IntN(3) == 0 {
				in.TTL = int64(300 * time.Millisecond)
			}
		case r < 4:
			in.Kind = history.Set
		case r < 5:
			h.mu.Lock()
			in.Version = h.version[key]
			h.mu.Unlock()
			in.Kind = history.CAS
		case r < 8:
			in.Kind = history.Get
		default:
			in.Kind = history.GetDel
		}
		h.do(id, s, in, commandOf(in))
	}
}

// commandOf is the write in stands for; nil for a read.
func commandOf(in history.Input) *command.Command {
	set := command.KVSetRequest{Key: []byte(in.Key), Value: []byte(in.Value), TTL: time.Duration(in.TTL)}
	switch in.Kind {
	case history.SetNX:
		set.Mode = command.SetNX
	case history.Set:
	case history.CAS:
		set.Mode, set.Version = command.SetCAS, in.Version
	case history.GetDel:
		return command.KVGetDelCommand([]byte(in.Key), 0)
	default:
		return nil
	}
	return command.KVSetCommand(set)
}

func (h *historyRun) do(client int, s *Store, in history.Input, cmd *command.Command) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	note := opNote{node: s.NodeID(), leader: s.IsLeader()}
	call := h.now()
	var out history.Output
	var err error
	if in.Kind == history.Get {
		var e command.KVEntry
		e, err = s.KV(ctx, []byte(in.Key), false)
		switch {
		case errors.Is(err, command.ErrNotFound):
			out, err = history.Output{}, nil
		case err == nil:
			out = history.Output{OK: true, Value: string(e.Value), Version: e.Version}
		}
		if err != nil {
			return // an unanswered read constrains nothing
		}
	} else {
		cmd.ReqID = storeapi.NewRequestID()
		var res *command.Result
		res, err = s.Apply(ctx, cmd)
		if err == nil {
			out = outputOf(in.Kind, res)
		}
		note.reqID = cmd.ReqID
		if err != nil {
			note.err = err.Error()
			h.record(recorded{op: porcupine.Operation{ClientId: client, Call: call, Return: math.MaxInt64,
				Input: in, Output: history.Output{Unknown: true}, Metadata: note}, reqID: cmd.ReqID, unknown: true})
			return
		}
	}
	ret := h.now()
	in.Call, in.Return = call, ret
	if out.OK && out.Version != 0 {
		h.mu.Lock()
		h.version[in.Key] = out.Version
		h.mu.Unlock()
	}
	h.record(recorded{op: porcupine.Operation{ClientId: client, Call: call, Return: ret, Input: in, Output: out, Metadata: note}})
}

func outputOf(k history.Kind, r *command.Result) history.Output {
	switch k {
	case history.SetNX:
		if r.Code == command.CodeCreated {
			return history.Output{OK: true, Version: r.Version}
		}
		return history.Output{Value: string(r.Value)}
	case history.Set:
		return history.Output{OK: r.Err() == nil, Version: r.Version}
	case history.CAS:
		if r.Err() == nil {
			return history.Output{OK: true, Version: r.Version}
		}
		return history.Output{}
	case history.GetDel:
		if r.Err() == nil {
			return history.Output{OK: true, Value: string(r.Value)}
		}
		return history.Output{}
	}
	return history.Output{}
}

func (h *historyRun) record(r recorded) {
	h.mu.Lock()
	h.ops = append(h.ops, r)
	h.mu.Unlock()
}

// settle turns operations whose answer was lost into known ones (the
// request id was applied: its remembered result, returned by now) or drops
// them (never applied, or applied without changing anything, which the
// state machine does not remember: the history stays linearizable without
// them).
func (h *historyRun) settle() (ops []porcupine.Operation, settled, dropped int) {
	var s *Store
	for _, st := range h.c.Stores {
		if st != nil {
			s = st
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Barrier(ctx); err != nil {
		h.t.Fatalf("settle: %v", err)
	}
	ret := h.now()
	for _, r := range h.ops {
		if !r.unknown {
			ops = append(ops, r.op)
			continue
		}
		res, applied, err := s.FSM().LookupRequest(r.reqID)
		if err != nil {
			h.t.Fatal(err)
		}
		if !applied {
			dropped++
			continue
		}
		in := r.op.Input.(history.Input)
		in.Return = ret
		r.op.Input, r.op.Output, r.op.Return = in, outputOf(in.Kind, res), ret
		ops = append(ops, r.op)
		settled++
	}
	return ops, settled, dropped
}

// fault is one fault injected into a history.
type fault struct {
	name   string
	tweak  func(*Config)
	inject func(h *historyRun) (heal func())
}

func leaderIndex(h *historyRun) int { return h.c.WaitLeader(10 * time.Second) }

var t1Faults = []fault{
	{name: "leader isolated", inject: func(h *historyRun) func() {
		id := h.c.Cfgs[leaderIndex(h)].NodeID
		h.net.Isolate(id)
		return h.net.Heal
	}},
	{name: "one-way partition from the leader, healed under load", inject: func(h *historyRun) func() {
		id := h.c.Cfgs[leaderIndex(h)].NodeID
		for _, cfg := range h.c.Cfgs {
			if cfg.NodeID != id {
				h.net.Set(id, cfg.NodeID, faults.Blackhole)
			}
		}
		return h.net.Heal
	}},
	{name: "one-way partition to the leader", inject: func(h *historyRun) func() {
		id := h.c.Cfgs[leaderIndex(h)].NodeID
		for _, cfg := range h.c.Cfgs {
			if cfg.NodeID != id {
				h.net.Set(cfg.NodeID, id, faults.Blackhole)
			}
		}
		return h.net.Heal
	}},
	{name: "delayed links from the leader", inject: func(h *historyRun) func() {
		id := h.c.Cfgs[leaderIndex(h)].NodeID
		for _, cfg := range h.c.Cfgs {
			if cfg.NodeID != id {
				h.net.Delay(id, cfg.NodeID, 120*time.Millisecond)
			}
		}
		return h.net.Heal
	}},
	{name: "connections reset", inject: func(h *historyRun) func() {
		for _, a := range h.c.Cfgs {
			for _, b := range h.c.Cfgs {
				if a.NodeID != b.NodeID {
					h.net.Set(a.NodeID, b.NodeID, faults.Reset)
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
		h.net.Heal()
		return func() {}
	}},
	{name: "leadership transfer", inject: func(h *historyRun) func() {
		s := h.c.Stores[leaderIndex(h)]
		f := s.Raft().LeadershipTransfer()
		done := make(chan error, 1)
		go func() { done <- f.Error() }()
		select { // bounded: hashicorp/raft #696
		case <-done:
		case <-time.After(5 * time.Second):
		}
		return func() {}
	}},
	{name: "leader stopped and restarted", inject: func(h *historyRun) func() {
		i := leaderIndex(h)
		h.c.Stop(i)
		return func() { h.c.Start(i) }
	}},
	{name: "follower stopped, snapshot installed on restart",
		tweak: func(c *Config) {
			c.SnapshotThreshold, c.TrailingLogs, c.SnapshotInterval = 64, 16, 100*time.Millisecond
		},
		inject: func(h *historyRun) func() {
			i := (leaderIndex(h) + 1) % 3
			h.c.Stop(i)
			return func() { h.c.Start(i) }
		}},
}

// T1Result is one history's figures.
type t1Result struct {
	fault           string
	ops, settled    int
	dropped         int
	check           porcupine.CheckResult
	diverged        error // replicas' state hashes still differ 10 s after healing
	convergedWithin time.Duration
}

// failed says what a history found wrong, or "".
func (r t1Result) failed() string {
	switch {
	case r.check != porcupine.Ok:
		return fmt.Sprintf("history of %d operations is %s", r.ops, r.check)
	case r.diverged != nil:
		return r.diverged.Error()
	}
	return ""
}

func runT1History(t *testing.T, f fault, d time.Duration) t1Result {
	h := newHistoryRun(t, f.tweak)
	keys := []string{"a", "b", "c", "d"}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func(c int) { defer wg.Done(); h.client(c, keys, stop) }(c)
	}
	time.Sleep(d / 3)
	heal := f.inject(h)
	time.Sleep(d / 3)
	heal()
	time.Sleep(d / 3)
	close(stop)
	wg.Wait()
	healed := time.Now()
	res := t1Result{fault: f.name}
	res.diverged = h.c.Converge(10 * time.Second)
	res.convergedWithin = time.Since(healed)
	ops, settled, dropped := h.settle()
	res.ops, res.settled, res.dropped = len(ops), settled, dropped
	res.check = history.Check(ops, int64(30*time.Second))
	if res.check != porcupine.Ok {
		explainIllegal(t, f.name, ops)
	}
	return res
}

// onLogStore is fault f on nodes whose log is in store.
func onLogStore(f fault, store string) fault {
	tweak := f.tweak
	f.name = store + ": " + f.name
	f.tweak = func(c *Config) {
		c.LogStore = store
		if tweak != nil {
			tweak(c)
		}
	}
	return f
}

// TestT1Histories runs one short history per fault, on each log store, and
// checks each.
func TestT1Histories(t *testing.T) {
	if testing.Short() {
		t.Skip("T1: histories under faults")
	}
	var results []t1Result
	for _, store := range datadir.LogStores { // each log store under every fault
		for _, f := range t1Faults {
			f := onLogStore(f, store)
			t.Run(f.name, func(t *testing.T) {
				r := runT1History(t, f, 3*time.Second)
				if msg := r.failed(); msg != "" {
					t.Errorf("%s: %s", f.name, msg)
				}
				results = append(results, r)
			})
		}
	}
	total := 0
	for _, r := range results {
		total += r.ops
		t.Logf("%-52s %5d ops (%d settled by request id, %d never applied) %s, converged in %s",
			r.fault, r.ops, r.settled, r.dropped, r.check, r.convergedWithin.Round(time.Millisecond))
	}
	t.Logf("%d histories, %d operations checked", len(results), total)
}

// TestFailoverTime measures, over several rounds, the time from stopping
// the leader to the next acknowledged write through a surviving node. It
// reports figures; it asserts only that writes resume.
func TestFailoverTime(t *testing.T) {
	if testing.Short() {
		t.Skip("T1: failover time")
	}
	c := StartTestCluster(t, 3, nil)
	var took []time.Duration
	for round := 0; round < 6; round++ {
		leader := c.WaitLeader(10 * time.Second)
		survivor := c.Stores[(leader+1)%3]
		c.Stop(leader)
		stopped := time.Now()
		for i := 0; ; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			_, err := survivor.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprintf("r%d-%d", round, i)), Value: []byte("v")}))
			cancel()
			if err == nil {
				took = append(took, time.Since(stopped))
				break
			}
			if time.Since(stopped) > 30*time.Second {
				t.Fatalf("round %d: no write acknowledged 30 s after the leader stopped", round)
			}
		}
		c.Start(leader)
		c.WaitConverged(20 * time.Second)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("leader stopped -> next acknowledged write, %d rounds: p50 %s, max %s (election timeout %s): %v",
		len(took), took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond),
		c.Cfgs[0].ElectionTimeout, took)
}
