package resp

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// BenchmarkScriptLock: 64 clients each take and release their own
// redsync mutex (SET NX PX to take it, redsync's release script by
// EVALSHA to give it back), against redis-server (appendfsync always, as
// a store that acknowledges only what is on disk) and against a 3-node
// cluster's three nodes in the same run; ns/op is per lock taken and
// released.
//
//	go test -run '^$' -bench BenchmarkScriptLock -benchtime 5000x ./resp/
func BenchmarkScriptLock(b *testing.B) {
	redisAddr := startRedisServer(b)
	rc := redis.NewClient(&redis.Options{Addr: redisAddr})
	if err := rc.ConfigSet(context.Background(), "appendonly", "yes").Err(); err != nil {
		b.Fatal(err)
	}
	if err := rc.ConfigSet(context.Background(), "appendfsync", "always").Err(); err != nil {
		b.Fatal(err)
	}
	rc.Close()
	tc := startCluster(b, nil)
	tc.rc.WaitLeader(5 * time.Second)
	for _, target := range []struct {
		name  string
		addrs []string
	}{{"redis-server", []string{redisAddr}}, {"idemgate", tc.addrs}} {
		b.Run(target.name, func(b *testing.B) {
			const clients = 64
			var mutexes []*redsync.Mutex
			for i := 0; i < clients; i++ {
				c := redis.NewClient(&redis.Options{Addr: target.addrs[i%len(target.addrs)], PoolSize: 1})
				b.Cleanup(func() { c.Close() })
				rs := redsync.New(goredis.NewPool(c))
				mutexes = append(mutexes, rs.NewMutex(fmt.Sprintf("bench:lock:%d", i), redsync.WithTries(1)))
			}
			var left atomic.Int64
			left.Store(int64(b.N))
			ctx := context.Background()
			var wg sync.WaitGroup
			var failed atomic.Int64
			var firstErr atomic.Value
			b.ResetTimer()
			for _, m := range mutexes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for left.Add(-1) >= 0 {
						if err := m.LockContext(ctx); err != nil {
							failed.Add(1)
							firstErr.CompareAndSwap(nil, fmt.Sprint("lock: ", err))
							continue
						}
						if ok, err := m.UnlockContext(ctx); !ok || err != nil {
							failed.Add(1)
							firstErr.CompareAndSwap(nil, fmt.Sprint("unlock: ", ok, err))
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d of %d lock rounds failed; the first: %v", n, b.N, firstErr.Load())
			}
		})
	}
}
