package resp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"

	"github.com/idemgate/idemgate/internal/history"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestLinearizableAcrossLeaderKill: nine go-redis clients, three per node,
// run SET, SET NX GET, GET and GETDEL on three keys, each alone or as the
// one command of a MULTI/EXEC transaction (a read then goes through the
// log), while the leader (its listener and its store) is killed midway; the history, as the clients
// saw it, must be linearizable (history.ValueModel). A write whose reply
// never came is "unknown": it may or may not have happened. A read that
// failed did nothing and is left out.
func TestLinearizableAcrossLeaderKill(t *testing.T) {
	if res, path := leaderKillHistory(t); res != porcupine.Ok {
		t.Fatalf("history over the Redis protocol is %v (visualization: %s)", res, path)
	}
}

// leaderKillHistory runs the clients, kills the leader midway, and checks
// the history; on a failure, path is a visualization of it.
func leaderKillHistory(t *testing.T) (res porcupine.CheckResult, path string) {
	ops := killHistory(t, 1, history.Output{Unknown: true}, func(ctx context.Context, id, n int, rng *rand.Rand, cmds redis.Cmdable, run func(redis.Cmder) error) (any, any, bool, error) {
		in := history.Input{Key: fmt.Sprint("k", rng.IntN(3)), Value: fmt.Sprintf("c%d-%d", id, n)}
		var out history.Output
		var err error
		switch rng.IntN(4) {
		case 0:
			in.Kind = history.Set
			err = run(cmds.Set(ctx, in.Key, in.Value, 0))
			out.OK = err == nil
		case 1:
			in.Kind = history.SetNX
			cmd := cmds.SetArgs(ctx, in.Key, in.Value, redis.SetArgs{Mode: "NX", Get: true})
			if err = run(cmd); errors.Is(err, redis.Nil) {
				out.OK, err = true, nil
			} else {
				out.Value = cmd.Val()
			}
		case 2:
			in.Kind = history.Get
			cmd := cmds.Get(ctx, in.Key)
			if err = run(cmd); errors.Is(err, redis.Nil) {
				err = nil
			} else {
				out.OK, out.Value = true, cmd.Val()
			}
		default:
			in.Kind = history.GetDel
			cmd := cmds.GetDel(ctx, in.Key)
			if err = run(cmd); errors.Is(err, redis.Nil) {
				err = nil
			} else {
				out.OK, out.Value = true, cmd.Val()
			}
		}
		return in, out, in.Kind == history.Get, err
	})
	// The model needs each operation's window for TTLs.
	for i := range ops {
		ops[i].Input = withTimes(ops[i].Input.(history.Input), ops[i].Call, ops[i].Return)
	}
	res, info := porcupine.CheckOperationsVerbose(history.ValueModel.ToModel(), ops, 60*time.Second)
	if res != porcupine.Ok {
		path = t.TempDir() + "/history.html"
		porcupine.VisualizePath(history.ValueModel.ToModel(), info, path)
	}
	return res, path
}

// historyOp sends one operation (the n-th of client id) through cmds and
// runs it (run: alone, or the EXEC of its transaction); it returns the
// model's input and output, whether it only read, and the error.
type historyOp func(ctx context.Context, id, n int, rng *rand.Rand, cmds redis.Cmdable, run func(redis.Cmder) error) (in, out any, read bool, err error)

// killHistory starts a cluster; nine go-redis clients, three per node,
// each run op again and again (alone, or as the one command of a
// MULTI/EXEC transaction: a read then goes through the log), while the
// leader (its listener and its store) is killed after 300 operations; it
// returns the history of 900 or more, as the clients saw it. A write whose
// reply never came is unknown (Output unknown, returned at the end of
// time): it may or may not have happened. A read that failed did nothing
// and is left out. stream varies the clients' draws between histories.
func killHistory(t *testing.T, stream uint64, unknown any, op historyOp) []porcupine.Operation {
	tc := startCluster(t, nil)
	ctx := ctxT(t, 150*time.Second)
	leader := tc.rc.WaitLeader(5 * time.Second)
	base := time.Now()
	now := func() int64 { return int64(time.Since(base)) }

	var (
		mu       sync.Mutex
		ops      []porcupine.Operation
		done     atomic.Int64 // operations answered
		nUnknown atomic.Int64
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	const killAt, total = 300, 900
	for id := 0; id < 9; id++ {
		node := id % 3
		c := client(t, tc.addrs[node], func(o *redis.Options) { o.PoolSize = 1; o.ReadTimeout = 8 * time.Second })
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(id), stream))
			for n := 0; n < 100_000; n++ {
				select {
				case <-stop:
					return
				default:
				}
				// The command runs alone, or queued in a transaction:
				// then its result is there once EXEC answered.
				var cmds redis.Cmdable = c
				run := func(cmd redis.Cmder) error { return cmd.Err() }
				if rng.IntN(2) == 0 {
					tx := c.TxPipeline()
					cmds = tx
					run = func(cmd redis.Cmder) error {
						if _, err := tx.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
							return err
						}
						return cmd.Err()
					}
				}
				call := now()
				in, out, read, err := op(ctx, id, n, rng, cmds, run)
				o := porcupine.Operation{ClientId: id, Call: call, Return: now(), Input: in, Output: out}
				switch {
				case err != nil && read && node == leader:
					return // its node is gone
				case err != nil && read:
					time.Sleep(200 * time.Millisecond) // see below
					continue                           // a read that failed changed nothing
				case err != nil:
					// Never answered: it may have happened, at any time after the call.
					nUnknown.Add(1)
					o.Return, o.Output = math.MaxInt64, unknown
				}
				mu.Lock()
				ops = append(ops, o)
				mu.Unlock()
				done.Add(1)
				if err != nil && node == leader {
					return // its node is gone
				}
				if err != nil {
					// As a client backs off on CLUSTERDOWN: while the
					// others elect, a write answers at once, and a tight
					// loop would only pile up operations of unknown fate
					// for the checker to search.
					time.Sleep(200 * time.Millisecond)
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
	defer mu.Unlock()
	t.Logf("%d operations, %d unknown, leader %s killed after %d", len(ops), nUnknown.Load(), tc.rc.Cfgs[leader].NodeID, killAt)
	return ops
}

func withTimes(in history.Input, call, ret int64) history.Input {
	in.Call, in.Return = call, ret
	return in
}
