package api

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// A porcupine model of one once claim, whatever time says: a lease may run
// out at any point (the state machine's clock decides, not the client's),
// so a takeover is allowed whenever the claim is begun, but only with a
// fence above every fence handed out before; a complete is accepted only
// from the fence that holds the claim; once completed, the result never
// changes and every begin answers it.

type onceIn struct {
	complete bool
	fence    uint64 // complete's
	result   string // complete's
}

type onceOut struct {
	unknown bool
	answer  string // begin: begun, taken-over, in-progress, completed; complete: ok, stale
	fence   uint64
	result  string
}

type onceState struct {
	claim        int // 0 none, 1 begun, 2 completed
	fence        uint64
	fenceUnknown bool // a begin nobody saw the answer of may hold it, with a fence above maxFence
	maxFence     uint64
	result       string
}

func onceStep(s onceState, in onceIn, out onceOut) []onceState {
	var next []onceState
	holds := func(f uint64) bool { return s.claim == 1 && !s.fenceUnknown && s.fence == f }
	if in.complete {
		completed := onceState{claim: 2, fence: in.fence, maxFence: s.maxFence, result: in.result}
		same := s.claim == 2 && s.fence == in.fence && s.result == in.result
		switch {
		case out.unknown:
			next = append(next, s)
			if holds(in.fence) {
				next = append(next, completed)
			}
		case out.answer == "ok" && (holds(in.fence) || same):
			next = append(next, completed)
		case out.answer == "stale" && !holds(in.fence) && !same:
			next = append(next, s)
		}
		return next
	}
	fresh := func(f uint64) bool { return f > s.maxFence }
	switch {
	case out.unknown:
		next = append(next, s)
		if s.claim != 2 {
			next = append(next, onceState{claim: 1, fenceUnknown: true, maxFence: s.maxFence})
		}
	case out.answer == "begun" && s.claim == 0 && fresh(out.fence):
		next = append(next, onceState{claim: 1, fence: out.fence, maxFence: out.fence})
	case out.answer == "taken-over" && s.claim == 1 && fresh(out.fence):
		next = append(next, onceState{claim: 1, fence: out.fence, maxFence: out.fence})
	case out.answer == "in-progress" && s.claim == 1 && (s.fence == out.fence && !s.fenceUnknown || s.fenceUnknown && fresh(out.fence)):
		next = append(next, onceState{claim: 1, fence: out.fence, maxFence: max(s.maxFence, out.fence)})
	case out.answer == "completed" && s.claim == 2 && s.result == out.result && s.fence == out.fence:
		next = append(next, s)
	}
	return next
}

var onceModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{onceState{}} },
	Step: func(st, in, out interface{}) []interface{} {
		var next []interface{}
		seen := map[onceState]bool{}
		for _, n := range onceStep(st.(onceState), in.(onceIn), out.(onceOut)) {
			if !seen[n] {
				seen[n] = true
				next = append(next, n)
			}
		}
		return next
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(onceIn), out.(onceOut)
		verb := "begin"
		if i.complete {
			verb = fmt.Sprintf("complete(f%d, %q)", i.fence, i.result)
		}
		if o.unknown {
			return verb + " -> ?"
		}
		return fmt.Sprintf("%s -> %s f%d %q", verb, o.answer, o.fence, o.result)
	},
}

// TestOnceHistoryAcrossLeaderKill: six clients on a real 3-node cluster
// begin one claim with short leases; a holder pauses before it completes
// (often past its lease, so others take over and its complete comes late);
// the leader is killed midway. The history, answers lost to the kill
// included (unknown), must be one the model allows: fences rise, only the
// holder's complete is accepted, a completed result never changes. Then
// the next claim, until enough operations are in.
func TestOnceHistoryAcrossLeaderKill(t *testing.T) {
	ac := startAPICluster(t, 3)
	leader := ac.c.WaitLeader(10 * time.Second)
	base := time.Now()
	now := func() int64 { return int64(time.Since(base)) }
	var (
		mu   sync.Mutex
		ops  = map[int][]porcupine.Operation{} // by claim
		done atomic.Int64
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	var claim atomic.Int64
	record := func(k int, op porcupine.Operation) {
		mu.Lock()
		ops[k] = append(ops[k], op)
		mu.Unlock()
		done.Add(1)
	}
	for id := 0; id < 6; id++ {
		node := id % 3
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(id), 7))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if node == leader && done.Load() >= 60 {
					return // its node is being killed
				}
				k := int(claim.Load())
				path := fmt.Sprintf("hist/claim-%d", k)
				call := now()
				r, err := testsupport.Do("POST", ac.urls[node]+"/v1/once/"+path+"/begin?lease=150ms", "payload")
				op := porcupine.Operation{ClientId: id, Call: call, Return: now(), Input: onceIn{}}
				var ans beginAnswer
				switch {
				case err != nil || r.Status >= 500:
					op.Return, op.Output = math.MaxInt64, onceOut{unknown: true}
				case r.Status == 201 && json.Unmarshal([]byte(r.Body), &ans) == nil:
					a := "begun"
					if ans.TakenOver {
						a = "taken-over"
					}
					op.Output = onceOut{answer: a, fence: ans.Fence}
				case r.Status == 200 && json.Unmarshal([]byte(r.Body), &ans) == nil && ans.Result != nil:
					op.Output = onceOut{answer: "completed", fence: ans.Fence, result: string(*ans.Result)}
				case r.Status == 409:
					var f uint64
					fmt.Sscanf(r.Body[max(0, strings.Index(r.Body, "fence "))+len("fence "):], "%d", &f)
					op.Output = onceOut{answer: "in-progress", fence: f}
				default:
					t.Errorf("begin: %d %s", r.Status, r.Body)
					return
				}
				record(k, op)
				switch o := op.Output.(onceOut); {
				case o.answer == "completed":
					claim.CompareAndSwap(int64(k), int64(k+1))
					continue
				case o.answer != "begun" && o.answer != "taken-over":
					time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
					continue
				}
				fence := op.Output.(onceOut).fence
				time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond) // the work; a pause past the lease, often
				result := fmt.Sprintf("done by %d/%d", id, n)
				call = now()
				r, err = testsupport.Do("POST", ac.urls[node]+"/v1/once/"+path+"/complete", completeJSON(fence, result), "Content-Type", "application/json")
				op = porcupine.Operation{ClientId: id, Call: call, Return: now(), Input: onceIn{complete: true, fence: fence, result: result}}
				switch {
				case err != nil || r.Status >= 500:
					op.Return, op.Output = math.MaxInt64, onceOut{unknown: true}
				case r.Status == 200:
					op.Output = onceOut{answer: "ok"}
				case r.Status == 409:
					op.Output = onceOut{answer: "stale"}
				default:
					t.Errorf("complete: %d %s", r.Status, r.Body)
					return
				}
				record(k, op)
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
	stale, claims := 0, 0
	for k, h := range ops {
		claims++
		for _, op := range h {
			if o, ok := op.Output.(onceOut); ok && o.answer == "stale" {
				stale++
			}
		}
		res, info := porcupine.CheckOperationsVerbose(onceModel.ToModel(), h, 60*time.Second)
		if res != porcupine.Ok {
			path := t.TempDir() + "/history.html"
			porcupine.VisualizePath(onceModel.ToModel(), info, path)
			t.Fatalf("claim %d: the history is %v (visualization: %s)", k, res, path)
		}
	}
	t.Logf("%d operations over %d claims, %d late completes refused; leader %d killed after 60", done.Load(), claims, stale, leader)
	if stale == 0 {
		t.Error("no holder's complete came late: the history did not exercise takeovers")
	}
}
