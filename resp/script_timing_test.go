package resp

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/idemgate/idemgate/bench"
	"github.com/idemgate/idemgate/raftstore"
)

// The speed table (benchmarks, not timed tests): 64 go-redis
// clients against redis-server (appendonly yes, appendfsync always: a
// store that acknowledges only what is on disk) and against a 3-node
// cluster's three nodes (the clients spread over them), in the same run;
// ns/op is per round of the benchmark's operation.
//
//	go test -run '^$' -bench 'BenchmarkScriptLock|BenchmarkSetIfEq|BenchmarkMultiFourWrites' -benchtime 3000x ./resp/

const benchClients = 64

// Settings of the benchmarks' cluster, for measuring what bounds the rows
// (docs/performance.md): IDEMGATE_BENCH_LEADER_ONLY=1 puts every client of
// the three rows on the leader (no forwarding; the budgets keep theirs
// spread), IDEMGATE_BENCH_LOG_NOSYNC=1 skips the Raft
// log's fsyncs (raftstore.Config.LogNoSync: unsafe, here only to see the
// share of a round they take), IDEMGATE_BENCH_BATCHES_IN_FLIGHT=n sets
// raftstore.Config.MaxBatchesInFlight.
var (
	benchLeaderOnly = os.Getenv("IDEMGATE_BENCH_LEADER_ONLY") == "1"
	benchLogNoSync  = os.Getenv("IDEMGATE_BENCH_LOG_NOSYNC") == "1"
	benchInFlight   = os.Getenv("IDEMGATE_BENCH_BATCHES_IN_FLIGHT")
)

// benchTargets starts redis-server with every write fsynced and a 3-node
// cluster, and returns their addresses by name.
func benchTargets(b *testing.B) []benchTarget {
	redisAddr := startRedisServer(b)
	rc := redis.NewClient(&redis.Options{Addr: redisAddr})
	for _, kv := range [][2]string{{"appendonly", "yes"}, {"appendfsync", "always"}} {
		if err := rc.ConfigSet(context.Background(), kv[0], kv[1]).Err(); err != nil {
			b.Fatal(err)
		}
	}
	rc.Close()
	tc := startBenchCluster(b)
	addrs := tc.addrs
	if l := tc.rc.WaitLeader(5 * time.Second); benchLeaderOnly {
		addrs = addrs[l : l+1]
	}
	return []benchTarget{{"redis-server", []string{redisAddr}}, {"idemgate", addrs}}
}

// startBenchCluster is startCluster with the benchmarks' settings above.
func startBenchCluster(b *testing.B) *testCluster {
	inFlight := 0
	if benchInFlight != "" {
		n, err := strconv.Atoi(benchInFlight)
		if err != nil || n < 1 {
			b.Fatalf("IDEMGATE_BENCH_BATCHES_IN_FLIGHT=%q: want a whole number of at least 1", benchInFlight)
		}
		inFlight = n
	}
	return startClusterWith(b, func(c *raftstore.Config) {
		c.LogNoSync = benchLogNoSync
		if inFlight > 0 {
			c.MaxBatchesInFlight = inFlight
		}
	}, nil)
}

type benchTarget struct {
	name  string
	addrs []string
}

// runRounds runs b.N rounds over benchClients clients, each with a
// connection of its own: round(i, c) is client i's round; a failed round
// fails the benchmark. Beside ns/op it reports the process's CPU per
// round (cpu-µs/op, getrusage: the clients', and for idemgate the three
// nodes' as well; redis-server's own is another process's), the figure
// to compare when the machine is shared and the rates swing.
func runRounds(b *testing.B, t benchTarget, setup func(i int, c *redis.Client) func(ctx context.Context) error) {
	var rounds []func(ctx context.Context) error
	for i := 0; i < benchClients; i++ {
		c := redis.NewClient(&redis.Options{Addr: t.addrs[i%len(t.addrs)], PoolSize: 1})
		b.Cleanup(func() { c.Close() })
		rounds = append(rounds, setup(i, c))
	}
	var left, failed atomic.Int64
	left.Store(int64(b.N))
	var firstErr atomic.Value
	ctx := context.Background()
	var wg sync.WaitGroup
	cpu0 := processCPU()
	b.ResetTimer()
	for _, round := range rounds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := round(ctx); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d rounds failed; the first: %v", n, b.N, firstErr.Load())
	}
}

// BenchmarkScriptLock: each client takes and releases its own redsync
// mutex (SET NX PX to take it, redsync's release script by EVALSHA to
// give it back); a round is one lock taken and released. Each call may
// take half the lock's 8 s expiry (redsync's default is 5%: 400 ms,
// which a loaded 2-core machine passes, failing the round while the SET
// applied, and the next round then finds its own lock taken).
func BenchmarkScriptLock(b *testing.B) {
	for _, target := range benchTargets(b) {
		b.Run(target.name, func(b *testing.B) {
			runRounds(b, target, func(i int, c *redis.Client) func(ctx context.Context) error {
				m := redsync.New(goredis.NewPool(c)).NewMutex(fmt.Sprintf("bench:lock:%d", i), redsync.WithTries(1), redsync.WithTimeoutFactor(0.5))
				return func(ctx context.Context) error {
					if err := m.LockContext(ctx); err != nil {
						return fmt.Errorf("lock: %w", err)
					}
					if ok, err := m.UnlockContext(ctx); !ok || err != nil {
						return fmt.Errorf("unlock: %v %v", ok, err)
					}
					return nil
				}
			})
		})
	}
}

// BenchmarkScriptLockBudget is BenchmarkScriptLock's idemgate half
// measured by the write budget of idemgate bench --breakdown
// (bench.MeasureBudget: the stage timers, CPU and allocations per round,
// fsyncs when perf can count them, commands per Raft entry), printed.
//
//	go test -run '^$' -bench BenchmarkScriptLockBudget -benchtime 1x ./resp/
func BenchmarkScriptLockBudget(b *testing.B) {
	tc := startBenchCluster(b)
	tc.rc.WaitLeader(5 * time.Second)
	var mutexes []*redsync.Mutex
	for i := 0; i < benchClients; i++ {
		c := redis.NewClient(&redis.Options{Addr: tc.addrs[i%len(tc.addrs)], PoolSize: 1})
		b.Cleanup(func() { c.Close() })
		mutexes = append(mutexes, redsync.New(goredis.NewPool(c)).NewMutex(fmt.Sprintf("bench:lock:%d", i), redsync.WithTries(1), redsync.WithTimeoutFactor(0.5)))
	}
	ctx := context.Background()
	budget := bench.MeasureBudget("redsync lock + unlock", bench.RunConfig{Clients: benchClients, Requests: 3000, Duration: time.Minute},
		func(c int, _ int64) error {
			if err := mutexes[c].LockContext(ctx); err != nil {
				return fmt.Errorf("lock: %w", err)
			}
			if ok, err := mutexes[c].UnlockContext(ctx); !ok || err != nil {
				return fmt.Errorf("unlock: %v %v", ok, err)
			}
			return nil
		})
	if budget.Err != "" || budget.Errors > 0 {
		b.Fatalf("%d errors: %s", budget.Errors, budget.Err)
	}
	bench.PrintBudgets(os.Stdout, []bench.Budget{budget})
}

// BenchmarkSetIfEqBudget is BenchmarkSetIfEq's idemgate half measured by
// the write budget (bench.MeasureBudget), printed: where a compare-and-set
// round's time goes, the forwarded two thirds' round trip to the leader
// beside the Raft stages.
//
//	go test -run '^$' -bench BenchmarkSetIfEqBudget -benchtime 1x ./resp/
func BenchmarkSetIfEqBudget(b *testing.B) {
	tc := startBenchCluster(b)
	tc.rc.WaitLeader(5 * time.Second)
	ctx := context.Background()
	var (
		clients []*redis.Client
		keys    []string
	)
	for i := 0; i < benchClients; i++ {
		c := redis.NewClient(&redis.Options{Addr: tc.addrs[i%len(tc.addrs)], PoolSize: 1})
		b.Cleanup(func() { c.Close() })
		key := fmt.Sprintf("bench:cas:%d", i)
		if err := c.Set(ctx, key, "a", 0).Err(); err != nil {
			b.Fatal(err)
		}
		clients, keys = append(clients, c), append(keys, key)
	}
	rounds := make([]int, benchClients) // each client's own count: MeasureBudget runs a client's rounds one after another
	states := [2]string{"a", "b"}
	budget := bench.MeasureBudget("SET IFEQ", bench.RunConfig{Clients: benchClients, Requests: 20000, Duration: time.Minute},
		func(c int, _ int64) error {
			from, to := states[rounds[c]%2], states[(rounds[c]+1)%2]
			rounds[c]++
			if err := clients[c].SetIFEQ(ctx, keys[c], to, from, 0).Err(); err != nil {
				return fmt.Errorf("SET %s IFEQ %s: %w", to, from, err)
			}
			return nil
		})
	if budget.Err != "" || budget.Errors > 0 {
		b.Fatalf("%d errors: %s", budget.Errors, budget.Err)
	}
	bench.PrintBudgets(os.Stdout, []bench.Budget{budget})
}

// BenchmarkScriptLockOneClient: one client alone on each node takes and
// releases its redsync mutex 300 times; it prints each half's mean time,
// on the leader and on the followers (where a node's state lags the
// leader's by a batch).
//
//	go test -run '^$' -bench BenchmarkScriptLockOneClient -benchtime 1x ./resp/
func BenchmarkScriptLockOneClient(b *testing.B) {
	tc := startCluster(b, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	ctx := context.Background()
	const rounds = 300
	for i, addr := range tc.addrs {
		role := map[bool]string{true: "leader", false: "follower"}[i == leader]
		c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
		b.Cleanup(func() { c.Close() })
		m := redsync.New(goredis.NewPool(c)).NewMutex(fmt.Sprintf("bench:one:%d", i), redsync.WithTries(1))
		var lock, unlock time.Duration
		for j := 0; j < rounds; j++ {
			t0 := time.Now()
			if err := m.LockContext(ctx); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if ok, err := m.UnlockContext(ctx); !ok || err != nil {
				b.Fatal(ok, err)
			}
			lock, unlock = lock+t1.Sub(t0), unlock+time.Since(t1)
		}
		fmt.Printf("node %d (%s): lock %v, unlock %v (means of %d rounds)\n", i, role, lock/rounds, unlock/rounds, rounds)
	}
}

// BenchmarkSetIfEq: each client moves its own key between two states
// with Redis 8.4's compare-and-set (SET k b IFEQ a, then SET k a IFEQ b;
// a round is one of them, and each must succeed). redis-server 7.0 has
// no IFEQ: its row is the plain SET of the same key and value, what a
// conditional SET costs Redis (one lookup, a compare, a write).
func BenchmarkSetIfEq(b *testing.B) {
	for _, target := range benchTargets(b) {
		b.Run(target.name, func(b *testing.B) {
			runRounds(b, target, func(i int, c *redis.Client) func(ctx context.Context) error {
				key := fmt.Sprintf("bench:cas:%d", i)
				if err := c.Set(context.Background(), key, "a", 0).Err(); err != nil {
					b.Fatal(err)
				}
				states := [2]string{"a", "b"}
				n := 0
				return func(ctx context.Context) error {
					from, to := states[n%2], states[(n+1)%2]
					n++
					if target.name == "redis-server" {
						return c.Set(ctx, key, to, 0).Err()
					}
					if err := c.SetIFEQ(ctx, key, to, from, 0).Err(); err != nil {
						return fmt.Errorf("SET %s IFEQ %s: %w", to, from, err)
					}
					return nil
				}
			})
		})
	}
}

// BenchmarkMultiFourWrites: each client runs MULTI, four SETs of its own
// keys, EXEC (go-redis's TxPipelined); a round is one transaction.
func BenchmarkMultiFourWrites(b *testing.B) {
	for _, target := range benchTargets(b) {
		b.Run(target.name, func(b *testing.B) {
			runRounds(b, target, func(i int, c *redis.Client) func(ctx context.Context) error {
				var keys [4]string
				for k := range keys {
					keys[k] = fmt.Sprintf("bench:tx:%d:%d", i, k)
				}
				return func(ctx context.Context) error {
					_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
						for _, k := range keys {
							p.Set(ctx, k, "v", 0)
						}
						return nil
					})
					return err
				}
			})
		})
	}
}

// processCPU is the user and system time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFollowerScript: what a writing script (queueScript: an INCR,
// an RPUSH, an LLEN, an HSET on three keys) costs a follower's client,
// run there (its first run reads its keys from the leader, then sends its
// effects) beside handed to the leader (script_leader.go), with the
// leader's own client as the baseline, in one run. "one" is one client
// on its own keys, ns/op its call's latency; "contended" is 8 clients on
// each node on the same keys, ns/op per call, and the calls that failed
// ("kept changing under it") are printed.
//
//	go test -run '^$' -bench BenchmarkFollowerScript -benchtime 2000x ./resp/
func BenchmarkFollowerScript(b *testing.B) {
	tc := startBenchCluster(b)
	li := tc.rc.WaitLeader(5 * time.Second)
	fi := (li + 1) % 3
	ls := tc.srv[fi].leaders
	ctx := context.Background()
	for _, row := range []struct {
		name    string
		node    int
		forward bool
	}{{"leader", li, true}, {"follower-runs", fi, false}, {"follower-forwards", fi, true}} {
		b.Run("one/"+row.name, func(b *testing.B) {
			for _, s := range tc.srv {
				s.leaders = map[bool]LeaderScripts{true: ls}[row.forward]
			}
			c := redis.NewClient(&redis.Options{Addr: tc.addrs[row.node], PoolSize: 1})
			defer c.Close()
			keys := []string{"fs:" + row.name + ":n", "fs:" + row.name + ":l", "fs:" + row.name + ":h"}
			for i := 0; i < b.N; i++ {
				if err := queueScript.Run(ctx, c, keys, "x").Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, forward := range []bool{false, true} {
		name := map[bool]string{false: "contended/followers-run", true: "contended/followers-forward"}[forward]
		b.Run(name, func(b *testing.B) {
			for _, s := range tc.srv {
				s.leaders = map[bool]LeaderScripts{true: ls}[forward]
			}
			const perNode = 8
			var clients []*redis.Client
			for node := range tc.addrs {
				for range perNode {
					c := redis.NewClient(&redis.Options{Addr: tc.addrs[node], PoolSize: 1, ReadTimeout: time.Minute})
					defer c.Close()
					clients = append(clients, c)
				}
			}
			keys := []string{"fsc:" + name + ":n", "fsc:" + name + ":l", "fsc:" + name + ":h"}
			var next, failed atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for _, c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						if err := queueScript.Run(ctx, c, keys, "x").Err(); err != nil {
							failed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(failed.Load())/float64(b.N), "failed/op")
		})
	}
}
