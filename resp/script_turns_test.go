package resp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// queueScript is a job queue's step as BullMQ's scripts make them: a
// counter, a list every call pushes to and trims, a hash every call
// writes; every call reads what the one before wrote.
var queueScript = redis.NewScript(`
local n = redis.call("INCR", KEYS[1])
redis.call("RPUSH", KEYS[2], n)
if redis.call("LLEN", KEYS[2]) > 10 then redis.call("LPOP", KEYS[2]) end
redis.call("HSET", KEYS[3], "last", n, "by", ARGV[1])
return n`)

// TestScriptsTakeTurns: 16 clients of one node run queueScript 40 times
// each on the same keys, as a queue's producer and workers do: every call
// succeeds, once, as against redis-server (the control), on the leader and
// on a follower. Before the turns (script_turns.go), the scripts ran on
// the same state and ran each other out of their 8 runs: "ERR the keys
// this script read kept changing under it (8 runs)".
func TestScriptsTakeTurns(t *testing.T) {
	const clients, calls = 16, 40
	tc := startPatientCluster(t)
	li := tc.rc.WaitLeader(10 * time.Second)
	targets := []struct{ name, addr string }{
		{"redis-server", startRedisServer(t)},
		{"leader", tc.addrs[li]},
		{"follower", tc.addrs[(li+1)%3]},
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			keys := []string{"turns:" + tg.name + ":n", "turns:" + tg.name + ":list", "turns:" + tg.name + ":hash"}
			var cs []*redis.Client
			for range clients {
				cs = append(cs, client(t, tg.addr, patient, func(o *redis.Options) { o.PoolSize = 1 }))
			}
			runQueueScripts(ctx, t, cs, calls, keys)
			c := client(t, tg.addr)
			if n, err := c.Get(ctx, keys[0]).Int(); err != nil || n != clients*calls {
				t.Fatalf("the counter is %d (%v), want %d", n, err, clients*calls)
			}
			if l, err := c.LRange(ctx, keys[1], 0, -1).Result(); err != nil || len(l) != 10 || l[9] != fmt.Sprint(clients*calls) {
				t.Fatalf("the list is %v (%v), want the last 10 numbers", l, err)
			}
		})
	}
}

// runQueueScripts has each client run queueScript calls times on keys,
// all at once, and fails the test unless every call succeeded, each
// answering a number of its own (1 to all the calls, each once).
func runQueueScripts(ctx context.Context, t *testing.T, clients []*redis.Client, calls int, keys []string) {
	t.Helper()
	var (
		mu   sync.Mutex
		got  []int64
		errs = map[string]int{}
		wg   sync.WaitGroup
	)
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < calls && ctx.Err() == nil; j++ {
				n, err := queueScript.Run(ctx, c, keys, fmt.Sprint(i)).Int64()
				mu.Lock()
				if err != nil {
					errs[err.Error()]++
				} else {
					got = append(got, n)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	total := len(clients) * calls
	if len(errs) > 0 || len(got) != total {
		t.Fatalf("%d of %d calls failed: %v", total-len(got), total, errs)
	}
	slices.Sort(got)
	for i, n := range got {
		if n != int64(i+1) {
			t.Fatalf("the calls answered %v…, want 1 to %d, each once", got[max(0, i-2):min(len(got), i+3)], total)
		}
	}
}

// TestKeyTurnsHostile: the turns' edges, each with its exact answer; the
// wait for a turn is bounded by the caller's context, and runs that take
// overlapping turns in any order never wait on each other for good.
func TestKeyTurnsHostile(t *testing.T) {
	k := newKeyTurns()
	keys := func(n int, prefix string) [][]byte {
		var ks [][]byte
		for i := 0; i < n; i++ {
			ks = append(ks, fmt.Appendf(nil, "%s%d", prefix, i))
		}
		return ks
	}
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	bg := context.Background()

	t.Run("no keys take no turn", func(t *testing.T) {
		tu, err := k.take(expired, k.stripesOf(nil))
		if err != nil || len(tu.held) != 0 {
			t.Fatalf("take(no keys) = %v, %v; want none held, no error", tu.held, err)
		}
	})
	t.Run("a key named twice is one turn", func(t *testing.T) {
		s := k.stripesOf([][]byte{[]byte("a"), []byte("a"), []byte("a")})
		if len(s) != 1 {
			t.Fatalf("stripesOf(a, a, a) = %v, want one", s)
		}
	})
	t.Run("100000 keys take each stripe at most once", func(t *testing.T) {
		s := k.stripesOf(keys(100000, "huge:"))
		if len(s) != keyTurnStripes || !slices.IsSorted(s) {
			t.Fatalf("%d stripes (sorted %v), want all %d, ascending", len(s), slices.IsSorted(s), keyTurnStripes)
		}
		tu, err := k.take(bg, s)
		if err != nil {
			t.Fatal(err)
		}
		tu.give()
		if again, err := k.take(expired, s); err != nil { // all free again: no wait, so even an ended context takes them
			t.Fatalf("after give, take = %v", err)
		} else {
			again.give()
		}
	})
	t.Run("a held turn: the wait ends with the context, holding none", func(t *testing.T) {
		s := k.stripesOf(keys(8, "held:"))
		holder, err := k.take(bg, s[len(s)-1:])
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
		defer cancel()
		tu, err := k.take(ctx, s)
		if !errors.Is(err, context.DeadlineExceeded) || len(tu.held) != 0 {
			t.Fatalf("take of a held turn = %v, %v; want DeadlineExceeded, none held", tu.held, err)
		}
		holder.give()
		if tu, err = k.take(expired, s); err != nil { // the ones it had taken were given back
			t.Fatalf("take after the holder gave = %v", err)
		}
		tu.give()
	})
	t.Run("widen before what it holds gives back and takes all in order", func(t *testing.T) {
		s := k.stripesOf(keys(64, "widen:"))
		tu, err := k.take(bg, s[len(s)/2:])
		if err != nil {
			t.Fatal(err)
		}
		if err := tu.widen(bg, s); err != nil || !slices.Equal(tu.held, s) {
			t.Fatalf("widen = %v, holding %v; want all of %v", err, tu.held, s)
		}
		if err := tu.widen(expired, s); err != nil { // nothing more to take
			t.Fatalf("widen by what it holds = %v", err)
		}
		tu.give()
		var nilTurn *turn
		nilTurn.give() // a run that took none
	})
	t.Run("concurrent overlapping runs, widened in any order, all finish", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(bg, 60*time.Second)
		defer cancel()
		pool := keys(40, "busy:")
		var wg sync.WaitGroup
		var mu sync.Mutex
		var failed []error
		for g := 0; g < 64; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(g), 1))
				for i := 0; i < 200; i++ {
					pick := func() [][]byte {
						var ks [][]byte
						for j := 0; j < 1+r.IntN(5); j++ {
							ks = append(ks, pool[r.IntN(len(pool))])
						}
						return ks
					}
					tu, err := k.take(ctx, k.stripesOf(pick()))
					if err == nil {
						err = tu.widen(ctx, k.stripesOf(pick()))
					}
					tu.give()
					if err != nil {
						mu.Lock()
						failed = append(failed, err)
						mu.Unlock()
						return
					}
				}
			}()
		}
		wg.Wait()
		if len(failed) > 0 {
			t.Fatalf("%d runs did not get their turns within a minute: %v", len(failed), failed[0])
		}
	})
}
