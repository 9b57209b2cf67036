package resp

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestRedisCLIExamples runs docs/redis.md's redis-cli block, as printed,
// with Debian's redis-cli against a 3-node cluster (ports 6381-6383 become
// the nodes' listeners), and checks every reply against the comment lines
// printed below its command ("…" stands for anything). redis-cli prints
// its terminal format here too (--no-raw, unless a line asks for --raw),
// so the replies are what a reader sees. Without redis-cli or bash it
// skips, except under CI (CI set), where it fails: .ci/run installs them.
func TestRedisCLIExamples(t *testing.T) {
	for _, bin := range []string{"redis-cli", "bash"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed (.ci/run installs it)", bin)
			}
			t.Skipf("%s is not installed (apt-get install redis-tools); docs/redis.md's redis-cli examples are not run", bin)
		}
	}
	block := readmeRedisBlock(t)
	tc := startCluster(t, nil)
	script := block
	for i, addr := range tc.addrs {
		_, port, _ := strings.Cut(addr, ":")
		script = regexp.MustCompile(fmt.Sprintf(`-p 638%d\b`, i+1)).ReplaceAllString(script, "-p "+port)
	}
	// Each command line is announced, so its output can be told apart.
	var run strings.Builder
	run.WriteString("set -euo pipefail\nredis-cli() { case \" $* \" in *\" --raw \"*) command redis-cli \"$@\";; *) command redis-cli --no-raw \"$@\";; esac; }\n")
	type command struct {
		line string
		want []string
	}
	var cmds []*command
	var cur *command
	for _, line := range strings.Split(script, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			cur = nil
		case strings.HasPrefix(line, "# ") && cur != nil:
			cur.want = append(cur.want, strings.TrimPrefix(line, "# "))
		case strings.HasPrefix(line, "#"):
			cur = nil
		default:
			cur = &command{line: line}
			cmds = append(cmds, cur)
			fmt.Fprintf(&run, "echo '@@%d'\n%s\n", len(cmds)-1, line)
		}
	}
	out, err := exec.Command("bash", "-c", run.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("the block failed: %v\n%s", err, out)
	}
	got := map[int][]string{}
	n := -1
	for _, line := range strings.Split(strings.ReplaceAll(string(out), "\r", ""), "\n") {
		if strings.HasPrefix(line, "@@") {
			fmt.Sscan(line[2:], &n)
			continue
		}
		if n >= 0 && line != "" {
			got[n] = append(got[n], line)
		}
	}
	checks := 0
	for i, c := range cmds {
		for _, want := range c.want {
			re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(want), "…", ".*") + "$")
			found := false
			for _, g := range got[i] {
				found = found || re.MatchString(g)
			}
			if !found {
				t.Errorf("docs/redis.md: %s\n  printed %q, want a line %q", c.line, got[i], want)
			}
			checks++
		}
	}
	if len(cmds) < 10 || checks < 10 {
		t.Fatalf("ran %d commands with %d checks: docs/redis.md's block was not found whole", len(cmds), checks)
	}
}

// readmeRedisBlock is the first sh block of docs/redis.md, the page of the
// Redis protocol.
func readmeRedisBlock(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/redis.md")
	if err != nil {
		t.Fatal(err)
	}
	sec, ok := strings.CutPrefix(string(b), "# The Redis protocol\n")
	_, block, ok2 := strings.Cut(sec, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/redis.md has no ```sh block under its title \"# The Redis protocol\"")
	}
	return block
}

// TestRedisDocNamesEveryCommand: docs/redis.md, the page a team moving
// its Redis code reads, names every command the listener answers (in
// capitals, as a word of its own), so none is answered undocumented.
func TestRedisDocNamesEveryCommand(t *testing.T) {
	b, err := os.ReadFile("../docs/redis.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for name := range commands {
		n := strings.ToUpper(name)
		if !regexp.MustCompile(`(?:^|[^A-Z0-9_.])` + regexp.QuoteMeta(n) + `(?:[^A-Z0-9_]|$)`).MatchString(doc) {
			t.Errorf("docs/redis.md does not name %s", n)
		}
	}
}
