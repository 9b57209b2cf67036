package resp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// racers are 64 clients of one connection each, spread over the nodes.
func racers(t *testing.T, tc *testCluster) []*redis.Client {
	clients := make([]*redis.Client, 64)
	for i := range clients {
		clients[i] = client(t, tc.addrs[i%3], func(o *redis.Options) { o.PoolSize = 1 })
	}
	return clients
}

// TestRacingSetNXOneWinner: 64 clients, spread over the three nodes, race
// SET NX PX on one key, many rounds: exactly one OK per round, and every
// loser sees the winner's value through SET ... NX GET.
func TestRacingSetNXOneWinner(t *testing.T) {
	tc := startCluster(t, nil)
	ctx := ctxT(t, 90*time.Second)
	clients := racers(t, tc)
	for round := 0; round < 5; round++ {
		key := fmt.Sprintf("lock:%d", round)
		var (
			mu      sync.Mutex
			winners []string
			seen    = map[string]int{}
			wg      sync.WaitGroup
		)
		start := make(chan struct{})
		for i, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				me := fmt.Sprint("client-", i)
				old, err := c.SetArgs(ctx, key, me, redis.SetArgs{Mode: "NX", Get: true, TTL: time.Minute}).Result()
				mu.Lock()
				defer mu.Unlock()
				switch {
				case errors.Is(err, redis.Nil):
					winners = append(winners, me)
				case err != nil:
					t.Errorf("client %d: %v", i, err)
				default:
					seen[old]++
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("round %d: %d winners %v, want exactly 1", round, len(winners), winners)
		}
		if seen[winners[0]] != 63 || len(seen) != 1 {
			t.Fatalf("round %d: losers saw %v, want the winner %s 63 times", round, seen, winners[0])
		}
	}
}

// TestRacingGetDelOneValue: a one-shot token (SET, then 64 racing GETDEL on
// the three nodes) is consumed exactly once; so is an IDEM.TOKEN.
func TestRacingGetDelOneValue(t *testing.T) {
	tc := startCluster(t, nil)
	ctx := ctxT(t, 90*time.Second)
	clients := racers(t, tc)
	for round := 0; round < 5; round++ {
		key := fmt.Sprintf("token:%d", round)
		if err := clients[round].Set(ctx, key, "secret", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		tok, err := clients[round+1].Do(ctx, "IDEM.TOKEN", "race").Text()
		if err != nil {
			t.Fatal(err)
		}
		var got, consumed, errs int
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				v, err := c.GetDel(ctx, key).Result()
				n, cerr := c.Do(ctx, "IDEM.CONSUME", "race", tok).Int()
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && v == "secret":
					got++
				case !errors.Is(err, redis.Nil):
					t.Errorf("client %d GETDEL: %q, %v", i, v, err)
					errs++
				}
				if cerr != nil {
					t.Errorf("client %d IDEM.CONSUME: %v", i, cerr)
				}
				consumed += n
			}()
		}
		close(start)
		wg.Wait()
		if got != 1 || consumed != 1 || errs != 0 {
			t.Fatalf("round %d: GETDEL gave the value %d times, IDEM.CONSUME succeeded %d times; want 1 and 1", round, got, consumed)
		}
	}
}

// TestPipelineKeepsOrder: a pipeline of dependent commands on one
// connection, sent to a follower, answers as if run one by one: each GET
// sees the SET before it, each INCR the count, each SET ... GET the value
// the write before it left.
func TestPipelineKeepsOrder(t *testing.T) {
	tc := startPatientCluster(t)
	ctx := context.Background() // each step is bounded by the listener; the pipeline by -timeout
	leader := tc.rc.WaitLeader(time.Minute)
	for _, node := range []int{(leader + 1) % 3, leader} {
		c := client(t, tc.addrs[node], patient)
		pipe := c.Pipeline()
		key, ctr := fmt.Sprint("pipe", node), fmt.Sprint("ctr", node)
		var gets []*redis.StringCmd
		var incrs []*redis.IntCmd
		var olds []*redis.StatusCmd
		for i := 0; i < 300; i++ {
			pipe.Set(ctx, key, fmt.Sprint(i), 0)
			gets = append(gets, pipe.Get(ctx, key))
			incrs = append(incrs, pipe.Incr(ctx, ctr))
			olds = append(olds, pipe.SetArgs(ctx, key, fmt.Sprint("x", i), redis.SetArgs{Get: true}))
		}
		pipe.Del(ctx, key)
		last := pipe.Exists(ctx, key)
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range gets {
			if v := gets[i].Val(); v != fmt.Sprint(i) {
				t.Fatalf("node %d: GET %d = %q, want %d: a pipelined read did not see the write before it", node, i, v, i)
			}
			if n := incrs[i].Val(); n != int64(i+1) {
				t.Fatalf("node %d: INCR %d = %d, want %d", node, i, n, i+1)
			}
			if v := olds[i].Val(); v != fmt.Sprint(i) {
				t.Fatalf("node %d: SET GET %d = %q, want %d", node, i, v, i)
			}
		}
		if last.Val() != 0 {
			t.Fatalf("node %d: EXISTS after DEL = %d", node, last.Val())
		}
	}
}
