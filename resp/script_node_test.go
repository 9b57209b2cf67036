package resp

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestNodeScriptLibraries: node-redlock v5 (acquire, a second acquire
// refused, extend, release) and rate-limiter-flexible (two points a
// minute, the third refused), unchanged over ioredis, against a 3-node
// cluster's follower and against redis-server: both print the same.
func TestNodeScriptLibraries(t *testing.T) {
	nodeModules(t, "rate-limiter-flexible")
	node, dir := nodeModules(t, "redlock")
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	follower := tc.addrs[(tc.rc.WaitLeader(5*time.Second)+1)%3]
	script := `
const Redis = require("ioredis");
const Redlock = require("redlock").default;
const { RateLimiterRedis } = require("rate-limiter-flexible");
const port = Number(process.argv[process.argv.length - 1]);
const r = new Redis({ port, host: "127.0.0.1", maxRetriesPerRequest: 0 });
(async () => {
  const redlock = new Redlock([r], { retryCount: 0 });
  let lock = await redlock.acquire(["nd:lock"], 5000);
  console.log("acquired");
  try {
    await redlock.acquire(["nd:lock"], 5000);
    console.log("second acquired");
  } catch (e) {
    console.log("second refused", e.name);
  }
  lock = await lock.extend(8000);
  const ttl = await r.pttl("nd:lock");
  console.log("extended", ttl > 5000 && ttl <= 8000);
  await lock.release();
  console.log("released", await r.exists("nd:lock"));
  const limiter = new RateLimiterRedis({ storeClient: r, points: 2, duration: 60, keyPrefix: "nd:rl" });
  for (let i = 0; i < 3; i++) {
    try {
      const res = await limiter.consume("user");
      console.log("consumed", res.remainingPoints);
    } catch (e) {
      console.log("refused", e.remainingPoints === undefined ? e : e.remainingPoints);
    }
  }
  r.disconnect();
})().catch((e) => { console.log("failed", e); process.exit(1); });
`
	want := "acquired\nsecond refused ExecutionError\nextended true\nreleased 0\nconsumed 1\nconsumed 0\nrefused 0\n"
	for _, addr := range []string{redisAddr, follower} {
		_, port, _ := strings.Cut(addr, ":")
		cmd := exec.Command(node, "-e", script, "--", port)
		cmd.Env = append(os.Environ(), "NODE_PATH="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != want {
			t.Errorf("node-redlock and rate-limiter-flexible against %s: %v\n%s\nwant\n%s", addr, err, out, want)
		}
	}
}
