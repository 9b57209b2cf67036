package resp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nodeModules is the folder of the npm packages .ci/run installs
// (IDEMGATE_NODE_MODULES overrides it) and node's path, when pkg is there;
// the test skips without them, except under CI, where it fails.
func nodeModules(t *testing.T, pkg string) (node, dir string) {
	t.Helper()
	dir = os.Getenv("IDEMGATE_NODE_MODULES")
	if dir == "" {
		dir = "/usr/local/lib/idemgate-npm/node_modules"
	}
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(dir, pkg)); err != nil || serr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node or the npm package %s in %s is missing (.ci/run installs them)", pkg, dir)
		}
		t.Skipf("node or the npm package %s in %s is missing: .ci/run shows how to install it", pkg, dir)
	}
	return node, dir
}

// TestIoredisMulti: ioredis's multi() (a transaction; exec() resolves to
// [err, result] pairs), with a command that fails when run, one refused
// when queued, and watch() with a conflict from a second client, against
// a 3-node cluster and against redis-server: both print the same.
func TestIoredisMulti(t *testing.T) {
	node, dir := nodeModules(t, "ioredis")
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	script := `
const Redis = require("ioredis");
const [p1, p2] = process.argv.slice(-2).map(Number);
const r = new Redis({ port: p1, host: "127.0.0.1", maxRetriesPerRequest: 0 });
const other = new Redis({ port: p2, host: "127.0.0.1", maxRetriesPerRequest: 0 });
const show = (res) => JSON.stringify(res.map(([e, v]) => (e ? "error: " + e.message : v)));
(async () => {
  await r.del("io:k", "io:w");
  console.log("exec", show(await r.multi().set("io:k", 10).incr("io:k").get("io:k").exists("io:k", "io:none").exec()));
  console.log("runtime", show(await r.multi().set("io:k", "word").incr("io:k").get("io:k").exec()));
  try {
    await r.multi().set("io:k", 1).call("INCRBY", "io:k").exec();
  } catch (e) {
    console.log("queued", e.message, e.previousErrors.map((p) => p.message).join("|"));
  }
  console.log("get", await r.get("io:k"));
  await r.set("io:w", 1);
  await r.watch("io:w");
  await other.set("io:w", 2);
  console.log("watched", JSON.stringify(await r.multi().set("io:w", 3).exec()));
  console.log("get", await r.get("io:w"));
  r.disconnect();
  other.disconnect();
})().catch((e) => { console.log("failed", e); process.exit(1); });
`
	want := `exec ["OK",11,"11",1]
runtime ["OK","error: ERR value is not an integer or out of range","word"]
queued EXECABORT Transaction discarded because of previous errors. ERR wrong number of arguments for 'incrby' command
get word
watched null
get 2
`
	for _, addrs := range [][2]string{{redisAddr, redisAddr}, {tc.addrs[0], tc.addrs[1]}} {
		_, p1, _ := strings.Cut(addrs[0], ":")
		_, p2, _ := strings.Cut(addrs[1], ":")
		cmd := exec.Command(node, "-e", script, "--", p1, p2)
		cmd.Env = append(os.Environ(), "NODE_PATH="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ioredis against %s: %v\n%s", addrs[0], err, out)
		}
		if string(out) != want {
			t.Errorf("ioredis against %s printed\n%s\nwant\n%s", addrs[0], out, want)
		}
	}
}
