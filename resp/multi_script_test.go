package resp

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestMultiScriptAtomic: go-redis's TxPipelined with a script inside
// (EVAL, then EVALSHA of a loaded script) from clients on all three nodes
// at once, each transaction a script's INCR then an INCR: in every EXEC
// the second reply is the first plus one (nothing ran between them, the
// script's write included), and the counter ends at twice the number of
// transactions (none lost, none applied twice), the same on every node.
// Six clients on one key make the optimistic runs collide: a transaction
// whose keys changed under it 8 runs in a row answers "… nothing it wrote
// was applied; retry", and is retried (at most 100 times).
func TestMultiScriptAtomic(t *testing.T) {
	tc := startCluster(t, nil)
	tc.rc.WaitLeader(5 * time.Second)
	ctx := ctxT(t, 120*time.Second)
	const key, perClient = "mtxs", 15
	incr := redis.NewScript("return redis.call('INCR', KEYS[1])")
	var wg sync.WaitGroup
	errs := make(chan error, 6*perClient)
	for i := 0; i < 6; i++ {
		c := client(t, tc.addrs[i%3])
		if i%2 == 1 {
			if err := incr.Load(ctx, c).Err(); err != nil {
				t.Fatal(err)
			}
		}
		wg.Add(1)
		go func(i int, c *redis.Client) {
			defer wg.Done()
			for n := 0; n < perClient; n++ {
				var first *redis.Cmd
				var second *redis.IntCmd
				var err error
				for try := 0; try < 100; try++ {
					_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
						if i%2 == 1 {
							first = incr.EvalSha(ctx, p, []string{key})
						} else {
							first = incr.Eval(ctx, p, []string{key})
						}
						second = p.Incr(ctx, key)
						return nil
					})
					if err == nil || !strings.Contains(err.Error(), "nothing it wrote was applied; retry") {
						break
					}
				}
				if err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
				a, err := first.Int64()
				if err != nil || second.Val() != a+1 {
					errs <- fmt.Errorf("client %d: the script's INCR %d (%v), then INCR %d: something ran between them", i, a, err, second.Val())
					return
				}
			}
		}(i, c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, addr := range tc.addrs {
		c := client(t, addr)
		if got, err := c.Get(ctx, key).Int(); err != nil || got != 2*6*perClient {
			t.Errorf("node %d: counter = %d, %v; want %d", i, got, err, 2*6*perClient)
		}
	}
}
