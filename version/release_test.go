package version_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/loopback"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestReleaseBuildIsStamped runs scripts/release.sh as a release is made,
// for the host's platform only (the other one costs a second build of
// everything): the binary it writes is static, SHA256SUMS holds its sum,
// and the version, commit and date it was given are what `idemgate
// version`, GET /v1/status, GET /v1/cluster, the Redis protocol's INFO and
// the idemgate_build_info metric of a node it serves show.
func TestReleaseBuildIsStamped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a node")
	}
	if err := exec.Command("git", "-C", "..", "rev-parse", "HEAD").Run(); err != nil {
		t.Skipf("not a git checkout (or no git): the script stamps the commit it reads with git: %v", err)
	}
	const release = "v0.0.0-releasetest"
	out := t.TempDir()
	cmd := exec.Command("sh", filepath.Join("..", "scripts", "release.sh"), release, out)
	// The test's checkout may hold uncommitted work: ALLOW_DIRTY marks
	// the commit -modified instead of refusing, which a release does.
	cmd.Env = append(os.Environ(), "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH, "ALLOW_DIRTY=1")
	script, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/release.sh: %v\n%s", err, script)
	}
	commit := strings.TrimSpace(gitOutput(t, "rev-parse", "HEAD"))
	bin := filepath.Join(out, "idemgate-"+release+"-"+runtime.GOOS+"-"+runtime.GOARCH)

	// SHA256SUMS names the binary with its sum.
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if want := hex.EncodeToString(sum[:]) + "  " + filepath.Base(bin) + "\n"; string(sums) != want {
		t.Errorf("SHA256SUMS = %q, want %q", sums, want)
	}
	// Static: no program interpreter (the dynamic loader) to find.
	if runtime.GOOS == "linux" {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has a program interpreter: not a static binary", bin)
			}
		}
		f.Close()
	}

	// idemgate version: the release, its commit and the commit's date.
	v, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	lines := strings.Split(string(v), "\n")
	if !strings.HasPrefix(lines[0], "idemgate "+release+" (") {
		t.Errorf("version's first line = %q, want it to name %s", lines[0], release)
	}
	for _, want := range []string{"  commit=" + commit, "  date=20"} {
		if !strings.Contains(string(v), want) {
			t.Errorf("version = %q, no %q", v, want)
		}
	}

	// A node it serves says the same on every face that names a build.
	addrs, err := loopback.FreeAddrs(4)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("nodes:\n  - {id: n1, listen: %q, api: %q, raft: %q, resp: %q}\n"+
		"data_dir: %q\nupstream: http://127.0.0.1:1\n", addrs[0], addrs[1], addrs[2], addrs[3], t.TempDir())), 0o644); err != nil {
		t.Fatal(err)
	}
	node := exec.Command(bin, "serve", "--config", cfg, "--bootstrap")
	logs := &testsupport.Logs{}
	node.Stdout, node.Stderr = logs, logs
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		node.Process.Kill()
		node.Wait()
	})
	api := "http://" + addrs[1]
	testsupport.WaitFor(t, "the release build's node ready", 30*time.Second, func() bool {
		r, err := testsupport.Do("GET", api+"/readyz", "")
		return err == nil && r.Status == 200
	})
	for _, path := range []string{"/v1/status", "/v1/cluster"} {
		r, err := testsupport.Do("GET", api+path, "")
		var got struct{ Version string }
		if err != nil || r.Status != 200 || json.Unmarshal([]byte(r.Body), &got) != nil || got.Version != release {
			t.Errorf("GET %s = %d %q (%v): want version %q", path, r.Status, r.Body, err, release)
		}
	}
	if got := respInfo(t, addrs[3]); !strings.Contains(got, "\r\nidemgate_version:"+release+"\r\n") {
		t.Errorf("INFO = %q, want idemgate_version:%s", got, release)
	}
	m, err := testsupport.Do("GET", api+"/metrics", "")
	if err != nil {
		t.Fatal(err)
	}
	info := regexp.MustCompile(`(?m)^idemgate_build_info\{(.*)\} 1$`).FindStringSubmatch(m.Body)
	if info == nil {
		t.Fatalf("/metrics has no idemgate_build_info 1:\n%s", grep(m.Body, "build_info"))
	}
	for _, want := range []string{`version="` + release + `"`, `commit="` + commit, `go_version="go`} {
		if !strings.Contains(info[1], want) {
			t.Errorf("idemgate_build_info{%s}: no %s", info[1], want)
		}
	}
	if t.Failed() {
		t.Logf("script:\n%s\nnode:\n%s", script, logs.String())
	}
}

// respInfo sends INFO server to the Redis-protocol listener at addr and
// returns its reply (a bulk string).
func respInfo(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		t.Fatalf("INFO: %q, %v", head, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 0 || n > 1<<16 {
		t.Fatalf("INFO: reply header %q", head)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatalf("INFO: %v", err)
	}
	return string(body)
}

func gitOutput(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", ".."}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

func grep(s, sub string) string {
	var b bytes.Buffer
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if strings.Contains(sc.Text(), sub) {
			b.WriteString(sc.Text() + "\n")
		}
	}
	return b.String()
}
