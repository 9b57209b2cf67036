package resp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRedislockOwnSuite runs bsm/redislock's own test suite, unchanged but
// for its server's address (it names 127.0.0.1:6379, a fixed port), against
// a 3-node cluster's follower: the module's files are copied into a module
// of their own, with the address swapped, built against this module's
// go-redis (its versions from this go.sum, no download). The suite selects
// DB 9 (its redisOpts) and runs every lock operation as a script. One of
// its tests is left out: TestObtain_retry_failure holds a lock for 50ms and
// expects two retries 5ms apart to fail within them, a timed assertion a
// loaded machine breaks (the lock expires first), against redis-server too.
func TestRedislockOwnSuite(t *testing.T) {
	tc := startCluster(t, nil)
	addr := tc.addrs[(tc.rc.WaitLeader(5*time.Second)+1)%3]
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", "github.com/bsm/redislock", "github.com/redis/go-redis/v9").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	mods := strings.Fields(string(out))
	if len(mods) != 4 {
		t.Fatalf("go list: %q", out)
	}
	dir, goRedis := mods[0], mods[3]
	tmp := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		text := string(src)
		if e.Name() == "redislock_test.go" && (!strings.Contains(text, `"127.0.0.1:6379"`) || !strings.Contains(text, "DB:      9,")) {
			t.Fatalf("%s no longer names 127.0.0.1:6379 and DB 9: this test must learn how it names its server", e.Name())
		}
		if err := os.WriteFile(filepath.Join(tmp, e.Name()), []byte(strings.ReplaceAll(text, `"127.0.0.1:6379"`, `"`+addr+`"`)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	gomod := "module github.com/bsm/redislock\n\ngo 1.17\n\nrequire github.com/redis/go-redis/v9 " + goRedis + "\n"
	sums, err := os.ReadFile("../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte(gomod), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "go.sum"), sums, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "test", "-count=1", "-v", "-skip", "^(TestObtain_retry_failure|Example)$", ".")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bsm/redislock's suite failed: %v\n%s", err, res)
	}
	if passed := strings.Count(string(res), "--- PASS"); passed < 14 {
		t.Fatalf("bsm/redislock's suite ran %d tests, want its 14 and more:\n%s", passed, res)
	}
}
