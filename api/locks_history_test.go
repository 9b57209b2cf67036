package api

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// A porcupine model of one lock. A holder's lease runs out by the state
// machine's clock, which the model does not see, but not before lockTTL
// has passed since the call of the acquire that was granted it (the lease
// starts at the grant, which comes after the call): a grant while another
// holds the lock, or a refused release of the holder's own fence, is
// allowed only once that much time has passed by the operation's return.
// Fences rise with every grant; a release is accepted only from the fence
// that holds the lock; "locked" is answered only while someone holds it.

const lockTTL = 3 * time.Second

type lockIn struct {
	release bool
	fence   uint64 // release's
	call    int64  // the operation's call time
}

type lockOut struct {
	unknown bool
	answer  string // acquire: granted, locked; release: ok, stale
	fence   uint64
	ret     int64 // the operation's return time (MaxInt64 when unknown)
}

type lockModelState struct {
	holder   uint64 // 0: none known
	unknown  bool   // an acquire nobody saw the answer of may hold it, with a fence above maxFence
	since    int64  // the call of the holder's acquire: its lease ends lockTTL after, or later
	maxFence uint64
}

func lockStep(s lockModelState, in lockIn, out lockOut) []lockModelState {
	free := lockModelState{maxFence: s.maxFence}
	held := s.holder != 0 || s.unknown
	mayHaveExpired := out.ret >= s.since+int64(lockTTL)
	if in.release {
		switch {
		case out.unknown:
			if s.holder == in.fence {
				return []lockModelState{s, free}
			}
			return []lockModelState{s}
		case out.answer == "ok" && s.holder == in.fence && !s.unknown:
			return []lockModelState{free}
		case out.answer == "stale" && s.holder == in.fence && mayHaveExpired:
			return []lockModelState{free}
		case out.answer == "stale" && s.holder != in.fence:
			return []lockModelState{s}
		}
		return nil
	}
	switch {
	case out.unknown:
		return []lockModelState{s, {unknown: true, since: in.call, maxFence: s.maxFence}}
	case out.answer == "granted" && out.fence > s.maxFence && (!held || mayHaveExpired):
		return []lockModelState{{holder: out.fence, since: in.call, maxFence: out.fence}}
	case out.answer == "locked" && held:
		return []lockModelState{s}
	}
	return nil
}

var lockModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{lockModelState{}} },
	Step: func(st, in, out interface{}) []interface{} {
		var next []interface{}
		for _, n := range lockStep(st.(lockModelState), in.(lockIn), out.(lockOut)) {
			next = append(next, n)
		}
		return next
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(lockIn), out.(lockOut)
		verb := "acquire"
		if i.release {
			verb = fmt.Sprintf("release(f%d)", i.fence)
		}
		if o.unknown {
			return verb + " -> ?"
		}
		return fmt.Sprintf("%s -> %s f%d", verb, o.answer, o.fence)
	},
}

// TestLockHistoryAcrossLeaderKill: six clients on a real 3-node cluster
// take one of two locks (waiting in its queue), hold it a moment and
// release it by fence; the leader is killed midway. The history of each
// lock, answers lost to the kill included (unknown), must be one the model
// allows: no two holders at once (before a lease could have run out),
// fences rise across the kill, no release is accepted from a fence that
// does not hold the lock, "locked" only while held. A planted grant while
// held (half the acquires) fails it.
func TestLockHistoryAcrossLeaderKill(t *testing.T) {
	ac := startAPICluster(t, 3)
	leader := ac.c.WaitLeader(10 * time.Second)
	base := time.Now()
	now := func() int64 { return int64(time.Since(base)) }
	var (
		mu   sync.Mutex
		ops  = map[string][]porcupine.Operation{}
		done atomic.Int64
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	record := func(name string, op porcupine.Operation) {
		mu.Lock()
		ops[name] = append(ops[name], op)
		mu.Unlock()
		done.Add(1)
	}
	for id := 0; id < 6; id++ {
		node := id % 3
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(id), 11))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if node == leader && done.Load() >= 60 {
					return // its node is being killed
				}
				name := fmt.Sprintf("hist-%d", rng.IntN(2))
				call := now()
				r, err := testsupport.Do("POST", ac.urls[node]+"/v1/locks/"+name+"?ttl="+lockTTL.String()+"&wait=2s", "")
				op := porcupine.Operation{ClientId: id, Call: call, Return: now(), Input: lockIn{call: call}}
				var ans lockAnswer
				switch {
				case err != nil || r.Status >= 500:
					op.Return, op.Output = math.MaxInt64, lockOut{unknown: true, ret: math.MaxInt64}
				case r.Status == 201 && json.Unmarshal([]byte(r.Body), &ans) == nil:
					op.Output = lockOut{answer: "granted", fence: ans.Fence, ret: op.Return}
				case r.Status == 409 && r.ProblemType(t) == "locked":
					op.Output = lockOut{answer: "locked", ret: op.Return}
				default:
					t.Errorf("acquire: %d %s", r.Status, r.Body)
					return
				}
				record(name, op)
				if op.Output.(lockOut).answer != "granted" {
					continue
				}
				fence := ans.Fence
				time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond) // the work
				call = now()
				r, err = testsupport.Do("DELETE", fmt.Sprintf("%s/v1/locks/%s?fence=%d", ac.urls[node], name, fence), "")
				op = porcupine.Operation{ClientId: id, Call: call, Return: now(), Input: lockIn{release: true, fence: fence, call: call}}
				switch {
				case err != nil || r.Status >= 500:
					op.Return, op.Output = math.MaxInt64, lockOut{unknown: true, ret: math.MaxInt64}
				case r.Status == 200:
					op.Output = lockOut{answer: "ok", ret: op.Return}
				case r.Status == 409 && r.ProblemType(t) == "stale-fence":
					op.Output = lockOut{answer: "stale", ret: op.Return}
				default:
					t.Errorf("release: %d %s", r.Status, r.Body)
					return
				}
				record(name, op)
			}
		}()
	}
	testsupport.WaitFor(t, "operations before the kill", 60*time.Second, func() bool { return done.Load() >= 60 })
	ac.c.Stop(leader)
	testsupport.WaitFor(t, "operations after the kill", 90*time.Second, func() bool { return done.Load() >= 240 })
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	granted := 0
	for name, h := range ops {
		for _, op := range h {
			if o, ok := op.Output.(lockOut); ok && o.answer == "granted" {
				granted++
			}
		}
		res, info := porcupine.CheckOperationsVerbose(lockModel.ToModel(), h, 60*time.Second)
		if res != porcupine.Ok {
			path := t.TempDir() + "/history.html"
			porcupine.VisualizePath(lockModel.ToModel(), info, path)
			sort.Slice(h, func(i, j int) bool { return h[i].Call < h[j].Call })
			for _, op := range h {
				ret := "?"
				if op.Return != math.MaxInt64 {
					ret = fmt.Sprint(time.Duration(op.Return).Milliseconds())
				}
				t.Logf("client %d [%d, %s] ms: %s", op.ClientId, time.Duration(op.Call).Milliseconds(), ret, lockModel.DescribeOperation(op.Input, op.Output))
			}
			t.Fatalf("lock %s: the history is %v (visualization: %s)", name, res, path)
		}
	}
	t.Logf("%d operations on %d locks, %d grants; leader %d killed after 60", done.Load(), len(ops), granted, leader)
	if granted < 40 {
		t.Errorf("only %d grants: the history did not exercise the lock", granted)
	}
}
