package resp

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// A script lock with a fencing counter, as lock libraries write it: the
// acquire sets the lock and increments the fence in one script (a retry
// by the holder answers its fence again), the release deletes the lock
// only for its holder.
var (
	lockAcquire = redis.NewScript(`
local cur = redis.call('get', KEYS[1])
if cur == ARGV[1] then return tonumber(redis.call('get', KEYS[2])) end
if cur then return 0 end
redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
return redis.call('incr', KEYS[2])`)
	lockRelease = redis.NewScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0`)
)

// lockInput and lockOutput are a lock history's operations.
type lockInput struct {
	acquire bool
	token   string
}

type lockOutput struct {
	unknown bool  // never answered: it may or may not have applied
	n       int64 // acquire: the fence, 0 refused; release: 1 released, 0 not held
}

// lockState is the lock as the model holds it.
type lockState struct {
	holder string
	fence  int64
}

// lockModel: one holder at a time; each acquire that takes the lock gets
// the next fence; the holder's acquire again gets its fence; a release by
// the holder frees it. (The lifetime is longer than the test: no expiry.)
var lockModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{lockState{}} },
	Step: func(st, in, out interface{}) []interface{} {
		s, i, o := st.(lockState), in.(lockInput), out.(lockOutput)
		var next lockState
		var n int64
		switch {
		case i.acquire && s.holder == "":
			next, n = lockState{holder: i.token, fence: s.fence + 1}, s.fence+1
		case i.acquire && s.holder == i.token:
			next, n = s, s.fence
		case i.acquire:
			next, n = s, 0
		case s.holder == i.token:
			next, n = lockState{fence: s.fence}, 1
		default:
			next, n = s, 0
		}
		switch {
		case o.unknown:
			return []interface{}{s, next}
		case o.n == n:
			return []interface{}{next}
		}
		return nil
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(lockInput), out.(lockOutput)
		verb := map[bool]string{true: "acquire", false: "release"}[i.acquire]
		if o.unknown {
			return fmt.Sprintf("%s(%s) -> ?", verb, i.token)
		}
		return fmt.Sprintf("%s(%s) -> %d", verb, i.token, o.n)
	},
}

// TestScriptLockAcrossLeaderKill: six clients, two per node, take and
// release a script lock with a fencing counter while the leader is killed
// midway. The history the clients saw must be linearizable as a lock
// (lockModel): never two holders, every fence once. Then the killed node
// comes back, and all three nodes' state machines hold the same state
// (hash of every bucket): a script's effects are applied alike
// everywhere.
func TestScriptLockAcrossLeaderKill(t *testing.T) {
	if res, path := scriptLockHistory(t, true); res != porcupine.Ok {
		t.Fatalf("the script lock's history is %v (visualization: %s)", res, path)
	}
}

// scriptLockHistory runs the clients, kills the leader midway, checks the
// history, and (when it holds) that the nodes converge; on a failure,
// path is a visualization of it. Without forward, followers run their
// clients' scripts themselves (as beside a leader that runs no forwarded
// scripts), reading a round trip away from the log: their effects then
// race the leader's, and only the log's read check keeps them right.
func scriptLockHistory(t *testing.T, forward bool) (porcupine.CheckResult, string) {
	tc := startCluster(t, nil)
	if !forward {
		for _, s := range tc.srv {
			s.leaders = nil // before any client: no run reads it concurrently
		}
	}
	ctx := ctxT(t, 180*time.Second)
	leader := tc.rc.WaitLeader(5 * time.Second)
	base := time.Now()
	now := func() int64 { return int64(time.Since(base)) }
	var (
		mu            sync.Mutex
		ops           []porcupine.Operation
		done, unknown atomic.Int64
		stop          = make(chan struct{})
		wg            sync.WaitGroup
	)
	keys := []string{"lk:lock", "lk:fence"}
	const killAt, total = 150, 450
	for id := 0; id < 6; id++ {
		node := id % 3
		c := client(t, tc.addrs[node], func(o *redis.Options) { o.PoolSize = 1; o.ReadTimeout = 8 * time.Second })
		wg.Add(1)
		go func() {
			defer wg.Done()
			// do runs one operation until its outcome is known, or the
			// node is gone; it records what the client saw.
			do := func(in lockInput) (int64, bool) {
				for {
					select {
					case <-stop:
						return 0, false
					default:
					}
					call := now()
					s := lockRelease
					args := []interface{}{in.token}
					if in.acquire {
						s, args = lockAcquire, []interface{}{in.token, 60000}
					}
					n, err := s.Run(ctx, c, keys, args...).Int64()
					op := porcupine.Operation{ClientId: id, Call: call, Return: now(), Input: in, Output: lockOutput{n: n}}
					if err != nil && strings.Contains(err.Error(), "kept changing under it") {
						continue // refused: nothing applied
					}
					if err != nil {
						unknown.Add(1)
						op.Return, op.Output = math.MaxInt64, lockOutput{unknown: true}
					}
					mu.Lock()
					ops = append(ops, op)
					mu.Unlock()
					done.Add(1)
					if err == nil {
						return n, true
					}
					if node == leader && errors.Is(err, ctx.Err()) {
						return 0, false
					}
					time.Sleep(200 * time.Millisecond) // as a client backs off while the others elect
				}
			}
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				tok := fmt.Sprintf("c%d-%d", id, n)
				fence, ok := do(lockInput{acquire: true, token: tok})
				if !ok {
					return
				}
				if fence > 0 {
					if _, ok := do(lockInput{token: tok}); !ok {
						return
					}
				}
			}
		}()
	}
	testsupport.WaitFor(t, "operations before the kill", 60*time.Second, func() bool { return done.Load() >= killAt })
	tc.srv[leader].Close()
	tc.rc.Stop(leader)
	testsupport.WaitFor(t, "operations after the kill", 90*time.Second, func() bool { return done.Load() >= total })
	close(stop)
	wg.Wait()

	mu.Lock()
	t.Logf("%d operations, %d unknown, leader %s killed after %d", len(ops), unknown.Load(), tc.rc.Cfgs[leader].NodeID, killAt)
	res, info := porcupine.CheckOperationsVerbose(lockModel.ToModel(), ops, 60*time.Second)
	mu.Unlock()
	if res != porcupine.Ok {
		path := t.TempDir() + "/history.html"
		porcupine.VisualizePath(lockModel.ToModel(), info, path)
		return res, path
	}
	tc.rc.Start(leader)
	tc.rc.WaitConverged(60 * time.Second)
	return res, ""
}
