package resp

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// TestRueidisDefaultClient runs rueidis's default client (client-side
// caching on: CLIENT TRACKING ON OPTIN at connect, DoCache through CLIENT
// CACHING YES + MULTI PTTL GET EXEC) against one node, with the writes
// made through another node (and against redis-server, the control):
// a second DoCache is served from the local cache; a write elsewhere
// pushes an invalidation (waited for, bounded), after which DoCache reads
// the new value; the same for a write by a script (rueidis.NewLuaScript:
// EVALSHA, then EVAL on NOSCRIPT), its own or another node's.
func TestRueidisDefaultClient(t *testing.T) {
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	for _, target := range []struct{ name, read, write string }{
		{"redis-server", redisAddr, redisAddr},
		{"idemgate", tc.addrs[(leader+1)%3], tc.addrs[(leader+2)%3]},
	} {
		t.Run(target.name, func(t *testing.T) {
			ctx := ctxT(t, 60*time.Second)
			invalidated := make(chan []string, 64)
			rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{target.read},
				OnInvalidations: func(msgs []rueidis.RedisMessage) {
					var keys []string
					for _, m := range msgs {
						s, _ := m.ToString()
						keys = append(keys, s)
					}
					invalidated <- keys
				}})
			if err != nil {
				t.Fatalf("rueidis.NewClient: %v", err)
			}
			defer rc.Close()
			w := client(t, target.write)
			key := "rueidis:" + target.name
			waitFor := func(what string) {
				t.Helper()
				for {
					select {
					case keys := <-invalidated:
						if keys == nil || (len(keys) == 1 && keys[0] == key) {
							return
						}
					case <-ctx.Done():
						t.Fatalf("%s: no invalidation of %q", what, key)
					}
				}
			}
			cached := func(want string, hit bool) {
				t.Helper()
				r := rc.DoCache(ctx, rc.B().Get().Key(key).Cache(), time.Minute)
				got, err := r.ToString()
				if err != nil || got != want || r.IsCacheHit() != hit {
					t.Fatalf("DoCache GET = %q, %v, hit %v; want %q, hit %v", got, err, r.IsCacheHit(), want, hit)
				}
			}

			if err := w.Set(ctx, key, "v1", 0).Err(); err != nil {
				t.Fatal(err)
			}
			cached("v1", false)
			cached("v1", true)
			if err := w.Set(ctx, key, "v2", 0).Err(); err != nil {
				t.Fatal(err)
			}
			waitFor("a write through another node")
			cached("v2", false)
			cached("v2", true)

			set := rueidis.NewLuaScript("return redis.call('SET', KEYS[1], ARGV[1])")
			if err := set.Exec(ctx, rc, []string{key}, []string{"v3"}).Error(); err != nil {
				t.Fatalf("script: %v", err)
			}
			waitFor("a script's write")
			get := rueidis.NewLuaScript("return redis.call('GET', KEYS[1])")
			if got, err := get.Exec(ctx, rc, []string{key}, nil).ToString(); err != nil || got != "v3" {
				t.Fatalf("script GET = %q, %v", got, err)
			}
			cached("v3", false)

			// A script run through the other node's listener, by go-redis.
			if err := w.Eval(ctx, "return redis.call('SET', KEYS[1], ARGV[1])", []string{key}, "v4").Err(); err != nil && err != redis.Nil {
				t.Fatal(err)
			}
			waitFor("a script through another node")
			cached("v4", false)

		})
	}
}
