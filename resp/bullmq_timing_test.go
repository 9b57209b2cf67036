package resp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgate/idemgate/raftstore"
)

// BenchmarkBullMQ is BullMQ's add+process rate (tests/bullmq/queue.js
// bench): a Queue adding b.N jobs, 16 adds in flight, while a Worker of
// concurrency 16 processes them (a no-op), from the first add to the
// last completion, against redis-server (appendonly yes, appendfsync
// always) and a 3-node cluster in the same run; the clients of the
// cluster are the leader's, as a queue's clients take turns only on one
// node (script_turns.go). It reports jobs/s; ns/op is per job. Without
// a command BullMQ sends, only redis-server's row is run, and the missing
// commands are logged.
//
//	go test -run '^$' -bench BenchmarkBullMQ -benchtime 2000x ./resp/
func BenchmarkBullMQ(b *testing.B) {
	harness, err := filepath.Abs(filepath.Join("..", "tests", "bullmq"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		b.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(harness, "node_modules", "bullmq")); err != nil {
		b.Skip("tests/bullmq/node_modules lacks bullmq (npm ci in tests/bullmq)")
	}
	redisAddr := startRedisServer(b)
	rc := redis.NewClient(&redis.Options{Addr: redisAddr})
	for _, kv := range [][2]string{{"appendonly", "yes"}, {"appendfsync", "always"}} {
		if err := rc.ConfigSet(context.Background(), kv[0], kv[1]).Err(); err != nil {
			b.Fatal(err)
		}
	}
	rc.Close()
	var missing []string
	for _, name := range []string{"xadd", "xtrim", "xread", "bzpopmin"} {
		if _, ok := commands[name]; !ok {
			missing = append(missing, strings.ToUpper(name))
		}
	}
	targets := []benchTarget{{"redis-server", []string{redisAddr}}}
	if len(missing) > 0 {
		b.Logf("idemgate lacks %s, which BullMQ sends: redis-server's row only", strings.Join(missing, ", "))
	} else {
		// Raft's default timeouts doubled (startPatientCluster's): a
		// queue's adds are not retried, and the test clusters' loopback
		// timeouts lost their leader mid-run on a loaded machine.
		tc := startClusterWith(b, func(c *raftstore.Config) {
			c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 2*time.Second, 2*time.Second, time.Second
		}, nil)
		targets = append(targets, benchTarget{"idemgate", []string{tc.addrs[tc.rc.WaitLeader(5*time.Second)]}})
	}
	for _, tg := range targets {
		addr := tg.addrs[0]
		b.Run(tg.name, func(b *testing.B) {
			cmd := exec.Command("node", "queue.js", "bench", addr, fmt.Sprintf("bench-%d-%d", b.N, time.Now().UnixNano()), strconv.Itoa(b.N), "16")
			cmd.Dir = harness
			b.ResetTimer()
			out, err := cmd.CombinedOutput()
			b.StopTimer()
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			var res struct {
				OK        bool
				Why       string
				Ms        float64
				PerSecond float64
			}
			if err != nil || json.Unmarshal([]byte(lines[len(lines)-1]), &res) != nil || !res.OK {
				b.Fatalf("queue.js bench against %s: %v\n%s", tg.name, err, out)
			}
			b.ReportMetric(res.PerSecond, "jobs/s")
			b.ReportMetric(res.Ms*1e6/float64(b.N), "ns/op")
		})
	}
}
