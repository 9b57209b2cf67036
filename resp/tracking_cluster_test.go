package resp

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestTrackingAcrossNodesAndLeaderKill: rueidis clients with client-side
// caching (CLIENT TRACKING, DoCache) on every node keep reading a set of
// keys while writers on one node change them, by SET, by a script's SET
// and DEL, and by a short PX lease left to expire; midway the leader is
// killed. No client may be left with a stale cache: once the writes stop,
// every key each surviving client has cached must be the key's value
// (each client was told of every change after its read, or its cache
// was flushed). A client of the killed node lost its connection (which
// told it to drop its cache); it is not checked.
func TestTrackingAcrossNodesAndLeaderKill(t *testing.T) {
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	ctx := ctxT(t, 300*time.Second)
	const nkeys = 8
	key := func(i int) string { return fmt.Sprintf("ct:%d", i) }

	type reader struct {
		node int
		c    rueidis.Client
	}
	var readers []reader
	for node := range tc.addrs {
		for range 2 {
			c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{tc.addrs[node]}, DisableRetry: true})
			if err != nil {
				t.Fatalf("rueidis.NewClient(%s): %v", tc.addrs[node], err)
			}
			t.Cleanup(c.Close)
			readers = append(readers, reader{node, c})
		}
	}

	var (
		stop   = make(chan struct{})
		writes atomic.Int64
		wg     sync.WaitGroup
	)
	for _, r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r.c.DoCache(ctx, r.c.B().Get().Key(key(i%nkeys)).Cache(), time.Hour) // errors too: the killed node's
			}
		}()
	}
	// Writers: two clients on a node that is not the leader (the leader is
	// killed), one more on the leader until it dies.
	writer := func(node, id int) {
		defer wg.Done()
		w := client(t, tc.addrs[node])
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k, v := key((i*3+id)%nkeys), fmt.Sprintf("w%d-%d", id, i)
			var err error
			switch i % 4 {
			case 0:
				err = w.Set(ctx, k, v, 0).Err()
			case 1: // a script's write, as rueidislock's
				err = w.Eval(ctx, `local r = redis.call("SET",KEYS[1],ARGV[1]);redis.call("GET",KEYS[1]);return r`, []string{k}, v).Err()
			case 2: // a script's delete, as rueidislock's release
				err = w.Eval(ctx, `if redis.call("GET",KEYS[1]) then return redis.call("DEL",KEYS[1]) end;return 0`, []string{k}).Err()
			case 3: // a lease left to expire
				err = w.Set(ctx, k, v, 150*time.Millisecond).Err()
			}
			if err == nil || err == redis.Nil {
				writes.Add(1)
			} else if node == leader {
				return // its node is gone
			} else {
				time.Sleep(50 * time.Millisecond) // the cluster elects
			}
		}
	}
	wg.Add(3)
	go writer((leader+1)%3, 0)
	go writer((leader+1)%3, 1)
	go writer(leader, 2)

	testsupport.WaitFor(t, "writes before the kill", 120*time.Second, func() bool { return writes.Load() >= 100 })
	tc.srv[leader].Close()
	tc.rc.Stop(leader)
	after := writes.Load()
	testsupport.WaitFor(t, "writes after the kill", 120*time.Second, func() bool { return writes.Load() >= after+100 })
	close(stop)
	wg.Wait()

	// The truth, read through a survivor once every lease has lapsed and
	// been swept (a key past its expiry reads as absent at once; its
	// cached value goes when the sweep's delete is applied).
	truth := client(t, tc.addrs[(leader+1)%3])
	time.Sleep(300 * time.Millisecond)
	want := map[string]string{}
	for i := range nkeys {
		v, err := truth.Get(ctx, key(i)).Result()
		if err != nil && err != redis.Nil {
			t.Fatalf("GET %s: %v", key(i), err)
		}
		want[key(i)] = v
	}
	// A lost invalidation leaves a stale value cached for ever; one in
	// flight is gone within the bound (one for all the checks).
	deadline := time.Now().Add(wakeBound)
	for n, r := range readers {
		if r.node == leader {
			continue
		}
		for i := range nkeys {
			k := key(i)
			var got string
			var hit bool
			stale := func() bool {
				res := r.c.DoCache(ctx, r.c.B().Get().Key(k).Cache(), time.Hour)
				v, err := res.ToString()
				if err != nil && !rueidis.IsRedisNil(err) {
					t.Fatalf("reader %d (node %d): GET %s: %v", n, r.node, k, err)
				}
				got, hit = v, res.IsCacheHit()
				return hit && got != want[k]
			}
			for stale() {
				if time.Now().After(deadline) {
					t.Errorf("reader %d (node %d) still has %s = %q cached, the key is %q: an invalidation was lost", n, r.node, k, got, want[k])
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}
