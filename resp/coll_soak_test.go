package resp

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestCollSoakReplicasAgree: six clients, two per node, send a bounded
// mix of hash, set, sorted set and list writes (the random ones too:
// SPOP, SRANDMEMBER, HRANDFIELD and ZRANDMEMBER, alone, in MULTI and in
// scripts that write what they drew), while the leader is killed midway
// and later restarted from its files; every replica, the restarted one
// too, must then hold the same state hash.
func TestCollSoakReplicasAgree(t *testing.T) {
	if err := collSoak(t, soakCmds, 60*time.Second); err != nil {
		t.Fatal(err)
	}
}

// soakCmds are the soak's commands, each a function of a draw: keys are
// few (and of one type per name), so commands meet on them.
var soakCmds = []func(r *rand.Rand) []any{
	func(r *rand.Rand) []any { return []any{"HSET", soakKey(r, "h"), soakM(r), r.IntN(100)} },
	func(r *rand.Rand) []any { return []any{"HINCRBY", soakKey(r, "h"), soakM(r), r.IntN(9) - 4} },
	func(r *rand.Rand) []any { return []any{"HDEL", soakKey(r, "h"), soakM(r), soakM(r)} },
	func(r *rand.Rand) []any { return []any{"HRANDFIELD", soakKey(r, "h"), r.IntN(5) - 2, "WITHVALUES"} },
	func(r *rand.Rand) []any { return []any{"SADD", soakKey(r, "s"), soakM(r), soakM(r), soakM(r)} },
	func(r *rand.Rand) []any { return []any{"SREM", soakKey(r, "s"), soakM(r)} },
	func(r *rand.Rand) []any { return []any{"SPOP", soakKey(r, "s")} },
	func(r *rand.Rand) []any { return []any{"SPOP", soakKey(r, "s"), r.IntN(4)} },
	func(r *rand.Rand) []any { return []any{"SRANDMEMBER", soakKey(r, "s"), r.IntN(7) - 3} },
	func(r *rand.Rand) []any { return []any{"SMOVE", soakKey(r, "s"), soakKey(r, "s"), soakM(r)} },
	func(r *rand.Rand) []any {
		return []any{"SUNIONSTORE", soakKey(r, "s"), soakKey(r, "s"), soakKey(r, "s")}
	},
	func(r *rand.Rand) []any {
		return []any{"ZADD", soakKey(r, "z"), r.IntN(20), soakM(r), r.IntN(20), soakM(r)}
	},
	func(r *rand.Rand) []any { return []any{"ZINCRBY", soakKey(r, "z"), float64(r.IntN(9)-4) / 4, soakM(r)} },
	func(r *rand.Rand) []any { return []any{"ZREM", soakKey(r, "z"), soakM(r)} },
	func(r *rand.Rand) []any { return []any{"ZPOPMIN", soakKey(r, "z"), r.IntN(3)} },
	func(r *rand.Rand) []any { return []any{"ZRANDMEMBER", soakKey(r, "z"), r.IntN(5) - 2, "WITHSCORES"} },
	func(r *rand.Rand) []any {
		return []any{"ZRANGESTORE", soakKey(r, "z"), soakKey(r, "z"), 0, r.IntN(5)}
	},
	func(r *rand.Rand) []any { return []any{"RPUSH", soakKey(r, "l"), soakM(r), soakM(r)} },
	func(r *rand.Rand) []any { return []any{"LPOP", soakKey(r, "l")} },
	func(r *rand.Rand) []any {
		return []any{"LMOVE", soakKey(r, "l"), soakKey(r, "l"), "LEFT", "RIGHT"}
	},
	func(r *rand.Rand) []any { return []any{"LINSERT", soakKey(r, "l"), "BEFORE", soakM(r), soakM(r)} },
	func(r *rand.Rand) []any { return []any{"LREM", soakKey(r, "l"), r.IntN(3) - 1, soakM(r)} },
	func(r *rand.Rand) []any { return []any{"PEXPIRE", soakKey(r, "h"), 600_000} },
	// Scripts write what their draws chose.
	func(r *rand.Rand) []any {
		return []any{"EVAL", "local m = redis.call('srandmember', KEYS[1], 2); if #m > 0 then redis.call('srem', KEYS[1], unpack(m)); redis.call('sadd', KEYS[2], unpack(m)) end; return #m",
			2, soakKey(r, "s"), soakKey(r, "s")}
	},
	func(r *rand.Rand) []any {
		return []any{"EVAL", "local f = redis.call('hrandfield', KEYS[1]); if f then redis.call('hdel', KEYS[1], f) end; return redis.call('spop', KEYS[2])",
			2, soakKey(r, "h"), soakKey(r, "s")}
	},
	func(r *rand.Rand) []any {
		return []any{"EVAL", "local m = redis.call('zrandmember', KEYS[1]); if m then redis.call('zincrby', KEYS[1], 1, m); redis.call('rpush', KEYS[2], m) end; return m",
			2, soakKey(r, "z"), soakKey(r, "l")}
	},
}

func soakKey(r *rand.Rand, kind string) string { return fmt.Sprintf("soak:%s%d", kind, r.IntN(4)) }
func soakM(r *rand.Rand) string                { return fmt.Sprint("m", r.IntN(12)) }

// collSoak runs the soak of cmds and returns why the replicas do not
// agree within converge, if they do not.
func collSoak(t *testing.T, cmds []func(r *rand.Rand) []any, converge time.Duration) error {
	tc := startCluster(t, nil)
	ctx := ctxT(t, 150*time.Second)
	leader := tc.rc.WaitLeader(5 * time.Second)
	var (
		done, failed atomic.Int64
		wg           sync.WaitGroup
		errMu        sync.Mutex
		errs         = map[string]int{}
	)
	const killAt, perClient = 600, 400
	for id := range 6 {
		node := id % 3
		c := client(t, tc.addrs[node], func(o *redis.Options) { o.PoolSize = 1; o.ReadTimeout = 8 * time.Second })
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(id), 3))
			for range perClient {
				var err error
				if r.IntN(4) == 0 { // a few commands as one transaction
					_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
						for range 1 + r.IntN(4) {
							p.Do(ctx, cmds[r.IntN(len(cmds))](r)...)
						}
						return nil
					})
				} else {
					err = c.Do(ctx, cmds[r.IntN(len(cmds))](r)...).Err()
				}
				done.Add(1)
				if errors.Is(err, redis.Nil) {
					err = nil
				}
				if err != nil {
					failed.Add(1)
					errMu.Lock()
					errs[fmt.Sprintf("%.40s", err)]++
					errMu.Unlock()
				}
				if err != nil && node == leader && done.Load() > killAt {
					return // its node is gone
				}
				if err != nil && ctx.Err() != nil {
					return
				}
			}
		}()
	}
	testsupport.WaitFor(t, "commands before the kill", 60*time.Second, func() bool { return done.Load() >= killAt })
	tc.srv[leader].Close()
	tc.rc.Stop(leader)
	wg.Wait()
	tc.rc.Start(leader)
	tc.rc.WaitLeader(30 * time.Second)
	t.Logf("%d commands (%d failed: %v), leader %s killed after %d and restarted", done.Load(), failed.Load(), errs, tc.rc.Cfgs[leader].NodeID, killAt)
	return tc.rc.Converge(converge)
}
