package e2e

// TestREADME runs the shell examples of README.md and of the docs/ pages it
// links, as printed, against the processes they start: a reader who copies
// them gets what the pages say.
//
// The convention (to add an example, follow it; the test explains a
// mismatch with the page's line):
//
//   - Every ```sh block runs, in one bash process (set -e, pipefail):
//     README.md's first, then those of each docs/ page in the order of
//     README's "## Documentation" table, each page top to bottom. So the
//     walk-through's cluster, variables and background jobs (`kill %1`)
//     carry from one block to the next and from README to the pages, as in
//     a reader's terminal. Every docs/*.md must be in that table. The
//     working directory is a copy of the repository, so `go build -o
//     idemgate .`, `go run ./examples/payments` and cluster.example.yaml's
//     ./data/{id} work as printed. The processes a block starts in the
//     background are stopped at the end.
//   - A block that cannot run here (other machines, long runs) is preceded,
//     on the line just before its fence, by
//     `<!-- readme-test: skip: the reason -->` (invisible on GitHub).
//   - A block that needs a cluster in another state than the walk-through's
//     (one that lost two nodes) is marked
//     `<!-- readme-test: scenario: NAME: the reason -->`: the walk-through
//     skips it, and a test of its own (TestREADMERecover for "recover")
//     brings a cluster to that state and runs the block as printed.
//   - Every line that calls curl is checked once it has run (one curl per
//     line; a check follows a complete one-line command, so keep curl out
//     of multi-line loops). Its status must be the 3-digit code its
//     trailing comment starts with (`curl ... # 409, body "charged"`), or
//     the one on an `# HTTP/1.1 201 Created` line just below it; without
//     either, a 2xx. Comment lines right below a curl line (no blank line
//     between) are its output: each must match a line of what curl printed,
//     with `…` standing for anything (`# {"token":"…","scope":"pay"}`).
//     Prose goes in comments above a command, after a blank line.
//
// The examples use fixed loopback addresses (cluster.example.yaml's, the
// toy upstream's 3000, the secured cluster's 127.0.0.11-13): when one is
// taken the test skips, naming it. Without curl or bash it skips too,
// except under CI (CI set), where it fails:
// .ci/run installs curl. The count of blocks run and of checks made is
// asserted, per page and in all, so pages whose examples did not run
// cannot pass.

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeBlock is one ```sh block of a page.
type readmeBlock struct {
	file     string   // the page, "README.md" or "docs/api.md"
	line     int      // the page's line of its first command
	lines    []string // its lines, as printed
	skip     string   // why it does not run, or ""
	scenario string   // the scenario test that runs it instead, or ""
}

// readmeCheck is what one curl line of a page must answer.
type readmeCheck struct {
	file    string   // the page
	line    int      // the page's line of the curl command
	status  string   // "201", or "2xx"
	samples []string // output lines it must print ("…" for anything)
}

const (
	readmeSkipMarker     = "<!-- readme-test: skip:"
	readmeScenarioMarker = "<!-- readme-test: scenario:"
)

// readmeBlocks extracts the ```sh blocks of a page; file names it in the
// blocks and in errors.
func readmeBlocks(file, text string) ([]readmeBlock, error) {
	var blocks []readmeBlock
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh" {
			continue
		}
		b := readmeBlock{file: file, line: i + 2}
		if i > 0 && strings.HasPrefix(strings.TrimSpace(lines[i-1]), readmeScenarioMarker) {
			rest := strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i-1]), readmeScenarioMarker)), "-->")
			name, why, ok := strings.Cut(rest, ":")
			if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(why) == "" {
				return nil, fmt.Errorf("%s:%d: a scenario marker must give its name and reason", file, i)
			}
			b.scenario = strings.TrimSpace(name)
			b.skip = "scenario " + b.scenario + ":" + why
		}
		if i > 0 && strings.HasPrefix(strings.TrimSpace(lines[i-1]), readmeSkipMarker) {
			b.skip = strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i-1]), readmeSkipMarker)), "-->")
			if strings.TrimSpace(b.skip) == "" {
				return nil, fmt.Errorf("%s:%d: a skip marker must give its reason", file, i)
			}
		}
		j := i + 1
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
			b.lines = append(b.lines, lines[j])
		}
		if j == len(lines) {
			return nil, fmt.Errorf("%s:%d: the ```sh block is never closed", file, i+1)
		}
		blocks = append(blocks, b)
		i = j
	}
	return blocks, nil
}

var (
	readmeStatusComment = regexp.MustCompile(`^(\d{3})\b`)
	readmeStatusLine    = regexp.MustCompile(`^HTTP/[0-9.]+ (\d{3})\b`)
	readmeCurlCall      = regexp.MustCompile(`(^|[\s;|&($])curl\s`)
)

// trailingComment splits a shell line into its command and the comment
// after an unquoted " #" ("" when there is none).
func trailingComment(line string) (cmd, comment string) {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i], strings.TrimSpace(line[i+1:])
		}
	}
	return line, ""
}

// at names a line of a page: "docs/api.md:12" (a block of no page: the
// test's own prologue).
func at(file string, line int) string {
	if file == "" {
		file = "(the test's own lines)"
	}
	return fmt.Sprintf("%s:%d", file, line)
}

// readmeScript turns the blocks that run into one bash script: each line
// as printed, a check call after every curl line. lineOf maps a script
// line (1-based) to the page's line it came from.
func readmeScript(blocks []readmeBlock) (script string, checks []readmeCheck, lineOf map[int]string, ran int) {
	var sb strings.Builder
	lineOf = map[int]string{}
	n := 0
	emit := func(s, where string) {
		sb.WriteString(s + "\n")
		n++
		lineOf[n] = where
	}
	emit(`set -eo pipefail`, "")
	emit(`trap 'echo "$LINENO" > "$READMETEST_DIR/errline"' ERR`, "")
	// The wrapper keeps each call's headers and output for the checks
	// (writing files, it works in $(...) and pipelines too).
	emit(`curl() { rm -f "$READMETEST_DIR/h" "$READMETEST_DIR/o"; command curl --no-progress-meter --max-time 30 -D "$READMETEST_DIR/h" "$@" | tee "$READMETEST_DIR/o"; }`, "")
	emit(`__check() { cp "$READMETEST_DIR/h" "$READMETEST_DIR/$1.h" 2>/dev/null || :; cp "$READMETEST_DIR/o" "$READMETEST_DIR/$1.o" 2>/dev/null || :; }`, "")
	emit(`__block() { echo "$1" >> "$READMETEST_DIR/blocks"; }`, "")
	for bi, b := range blocks {
		if b.skip != "" {
			continue
		}
		ran++
		emit(fmt.Sprintf("__block %d", bi), at(b.file, b.line-1))
		joined, first := "", 0 // a command continued over lines with \
		for i := 0; i < len(b.lines); i++ {
			line := b.lines[i]
			emit(line, at(b.file, b.line+i))
			cmd, comment := trailingComment(line)
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if joined == "" {
				first = b.line + i
			}
			joined += cmd
			if strings.HasSuffix(strings.TrimSpace(cmd), `\`) {
				continue
			}
			whole := joined
			joined = ""
			if !readmeCurlCall.MatchString(whole) {
				continue
			}
			c := readmeCheck{file: b.file, line: first, status: "2xx"}
			if m := readmeStatusComment.FindStringSubmatch(comment); m != nil {
				c.status = m[1]
			}
			for k := i + 1; k < len(b.lines) && strings.HasPrefix(strings.TrimSpace(b.lines[k]), "#"); k++ {
				sample := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(b.lines[k]), "#"))
				if m := readmeStatusLine.FindStringSubmatch(sample); m != nil && c.status == "2xx" {
					c.status = m[1]
				}
				c.samples = append(c.samples, sample)
			}
			emit(fmt.Sprintf("__check %d", len(checks)), at(b.file, b.line+i))
			checks = append(checks, c)
		}
	}
	emit(`echo done > "$READMETEST_DIR/done"`, "")
	return sb.String(), checks, lineOf, ran
}

// sampleRegexp matches a page's output sample: a whole line as printed,
// "…" standing for anything.
func sampleRegexp(sample string) *regexp.Regexp {
	parts := strings.Split(sample, "…")
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

// verify returns what is wrong with one check's recorded answer.
func (c readmeCheck) verify(headers, output string) []string {
	var problems []string
	status := ""
	for _, l := range strings.Split(headers, "\n") {
		if m := readmeStatusLine.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			status = m[1] // the last one: after a 100 Continue, the answer
		}
	}
	switch {
	case status == "":
		problems = append(problems, "no HTTP answer")
	case c.status == "2xx" && status[0] != '2':
		problems = append(problems, fmt.Sprintf("status %s, want a 2xx (or write the status in a trailing comment)", status))
	case c.status != "2xx" && status != c.status:
		problems = append(problems, fmt.Sprintf("status %s, want %s", status, c.status))
	}
	outLines := strings.Split(strings.ReplaceAll(output, "\r", ""), "\n")
	for i := range outLines {
		outLines[i] = strings.TrimSpace(outLines[i])
	}
	for _, s := range c.samples {
		re := sampleRegexp(s)
		if !slices.ContainsFunc(outLines, re.MatchString) {
			problems = append(problems, fmt.Sprintf("printed no line like %q", s))
		}
	}
	return problems
}

// skipUnlessFree skips the test when one of addrs cannot be bound.
func skipUnlessFree(t *testing.T, addrs []string) {
	t.Helper()
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Skipf("the examples of README and docs/ need %s, which is in use: %v", a, err)
		}
		l.Close()
	}
}

// readmeAddrs are the loopback addresses (host:port) the examples use.
func readmeAddrs(texts ...string) []string {
	seen := map[string]bool{}
	var addrs []string
	for _, text := range texts {
		for _, m := range regexp.MustCompile(`\b127\.0\.0\.\d{1,3}:\d+`).FindAllString(text, -1) {
			if !seen[m] {
				seen[m] = true
				addrs = append(addrs, m)
			}
		}
	}
	return addrs
}

// copyRepo copies the repository's files (not .git, not data a run left)
// into dir, for the examples to build and write in.
func copyRepo(dst string) error {
	return filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Name() == ".git" && d.IsDir(), (path == "data" || path == "idemgate-data") && d.IsDir():
			return filepath.SkipDir
		case d.Name() == ".git", path == "idemgate":
			return nil
		}
		target := filepath.Join(dst, path)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// readmeTools skips (or, under CI, fails) when bash or curl is missing.
func readmeTools(t *testing.T) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed: the examples of README and docs/ need it (.ci/run installs curl)", tool)
			}
			t.Skipf("%s is not installed: the examples of README and docs/ need it (not under CI, so skipping)", tool)
		}
	}
}

// readmeFloor is how many blocks run and curl answers are checked on each
// page today, at the least: fewer means examples stopped running (a fence
// renamed, a skip marker too many, a page gone from README's table).
var readmeFloor = map[string]struct{ blocks, checks int }{
	"README.md":          {4, 11},
	"docs/gateway.md":    {2, 6},
	"docs/client.md":     {1, 2},
	"docs/api.md":        {4, 40},
	"docs/operations.md": {3, 12},
	"docs/security.md":   {5, 19},
}

func TestREADME(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	readmeTools(t)
	blocks := loadReadmeBlocks(t)
	example, err := os.ReadFile("cluster.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	script, checks, lineOf, ran := readmeScript(blocks)
	ranOn, checksOn := map[string]int{}, map[string]int{}
	for _, b := range blocks {
		if b.skip == "" {
			ranOn[b.file]++
		}
	}
	for _, c := range checks {
		checksOn[c.file]++
	}
	floorBlocks, floorChecks := 0, 0
	for file, want := range readmeFloor {
		if ranOn[file] < want.blocks || checksOn[file] < want.checks {
			t.Errorf("%s: %d blocks would run with %d curl checks; want at least %d and %d", file, ranOn[file], checksOn[file], want.blocks, want.checks)
		}
		floorBlocks, floorChecks = floorBlocks+want.blocks, floorChecks+want.checks
	}
	if ran < floorBlocks || len(checks) < floorChecks {
		t.Errorf("README and docs/: %d blocks would run with %d curl checks; want at least %d and %d", ran, len(checks), floorBlocks, floorChecks)
	}
	if t.Failed() {
		t.FailNow()
	}
	var runnable strings.Builder
	for _, b := range blocks {
		if b.skip == "" {
			runnable.WriteString(strings.Join(b.lines, "\n"))
		}
	}
	skipUnlessFree(t, readmeAddrs(runnable.String(), string(example)))

	checked := runReadme(t, script, checks, lineOf, ran, nil)
	for _, file := range readmePages(t) {
		t.Logf("%s: %d blocks ran, %d curl answers checked", file, ranOn[file], checksOn[file])
	}
	t.Logf("README and docs/: %d blocks ran (%d skipped), %d curl answers checked", ran, len(blocks)-ran, checked)
}

// readmeLinkRe finds the docs/ pages README's "## Documentation" table
// links, in order.
var readmeLinkRe = regexp.MustCompile(`\]\((docs/[a-z0-9-]+\.md)\)`)

// readmePages is the order the examples run in: README.md, then the docs/
// pages in the order of README's "## Documentation" table. Every page of
// docs/ must be in it, so none has examples that never run.
func readmePages(t *testing.T) []string {
	t.Helper()
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(text), "\n## Documentation\n")
	if !ok {
		t.Fatal(`README.md has no "## Documentation" section linking the docs/ pages`)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	pages := []string{"README.md"}
	for _, m := range readmeLinkRe.FindAllStringSubmatch(table, -1) {
		if !slices.Contains(pages, m[1]) {
			pages = append(pages, m[1])
		}
	}
	onDisk, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range onDisk {
		if !slices.Contains(pages, filepath.ToSlash(p)) {
			t.Errorf("%s is not linked from README's Documentation table: its examples would never run", p)
		}
	}
	for _, p := range pages {
		if !slices.Contains(onDisk, filepath.FromSlash(p)) && p != "README.md" {
			t.Errorf("README's Documentation table links %s, which does not exist", p)
		}
	}
	return pages
}

// loadReadmeBlocks reads the ```sh blocks of README.md and of the docs/
// pages, in the order they run.
func loadReadmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	var blocks []readmeBlock
	for _, file := range readmePages(t) {
		text, err := os.ReadFile(filepath.FromSlash(file))
		if err != nil {
			t.Fatal(err)
		}
		bs, err := readmeBlocks(file, string(text))
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
	}
	return blocks
}

// runReadme runs script (readmeScript's) in a copy of the repository and
// checks what it recorded: every block ran, every curl answered as its
// line says. after, if set, runs once the script is done and before the
// processes it started are stopped. It returns the number of checks made.
func runReadme(t *testing.T, script string, checks []readmeCheck, lineOf map[int]string, ran int, after func()) int {
	t.Helper()
	work, state := t.TempDir(), t.TempDir()
	if err := copyRepo(work); err != nil {
		t.Fatal(err)
	}
	scriptPath := filepath.Join(state, "readme.sh")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(state, "output")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", scriptPath)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "READMETEST_DIR="+state)
	// Output to a file, not a pipe: the background processes the examples
	// start keep their copy of it open after bash exits.
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// One process group for bash and everything it starts, stopped as one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stopGroup(t, cmd.Process.Pid)
	runErr := cmd.Wait()

	output, _ := os.ReadFile(logPath)
	fail := func(format string, args ...any) {
		t.Errorf(format, args...)
	}
	if _, err := os.Stat(filepath.Join(state, "done")); err != nil {
		where := "?"
		if b, err := os.ReadFile(filepath.Join(state, "errline")); err == nil {
			n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			where = lineOf[n]
		}
		fail("the examples stopped at %s (%v); their output:\n%s", where, runErr, output)
	}
	done, _ := os.ReadFile(filepath.Join(state, "blocks"))
	if got := len(strings.Fields(string(done))); got != ran {
		fail("%d of the %d runnable blocks ran", got, ran)
	}
	checked := 0
	for i, c := range checks {
		h, herr := os.ReadFile(filepath.Join(state, fmt.Sprintf("%d.h", i)))
		o, _ := os.ReadFile(filepath.Join(state, fmt.Sprintf("%d.o", i)))
		if herr != nil && os.IsNotExist(herr) {
			continue // not reached: reported above
		}
		checked++
		for _, p := range c.verify(string(h), string(o)) {
			fail("%s: %s; curl printed:\n%s%s", at(c.file, c.line), p, h, o)
		}
	}
	if checked != len(checks) {
		fail("%d of the %d curl checks ran", checked, len(checks))
	}
	if after != nil && !t.Failed() {
		after()
	}
	if t.Failed() {
		output, _ = os.ReadFile(logPath)
		t.Logf("the examples' whole output:\n%s", output)
	}
	return checked
}

// stopGroup stops the examples' processes: SIGTERM to the group, SIGKILL
// to what is left after 15 s.
func stopGroup(t *testing.T, pgid int) {
	syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(-pgid, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the examples' processes still running 15s after SIGTERM; killing them")
	syscall.Kill(-pgid, syscall.SIGKILL)
}

// TestREADMEConvention checks the extraction and the checks on a README
// of its own, so a broken parser cannot make TestREADME pass unchecked.
func TestREADMEConvention(t *testing.T) {
	readme := "intro\n```sh\n" +
		"go build -o x .   # no check: not curl\n" +
		"curl -i 127.0.0.1:1/a -d 'x # y'   # 409, body \"charged\"\n" +
		"\n# prose\n" +
		"curl -i 127.0.0.1:1/b\n" +
		"# HTTP/1.1 201 Created\n" +
		"# {\"token\":\"…\",\"scope\":\"pay\"}\n" +
		"t=$(curl -s 127.0.0.1:1/c | sed s/a/b/)\n" +
		"curl -s 127.0.0.1:1/d \\\n  -H 'X: y'\n" +
		"```\n" +
		"<!-- readme-test: skip: other machines -->\n```sh\ncurl https://10.0.0.1:9001/\n```\n" +
		"```yaml\ncurl: no\n```\n"
	blocks, err := readmeBlocks("docs/page.md", readme)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].skip != "" || strings.TrimSpace(blocks[1].skip) != "other machines" {
		t.Fatalf("readmeBlocks = %+v, want a block that runs and one skipped for other machines", blocks)
	}
	_, checks, _, ran := readmeScript(blocks)
	want := []readmeCheck{
		{file: "docs/page.md", line: 4, status: "409"},
		{file: "docs/page.md", line: 7, status: "201", samples: []string{"HTTP/1.1 201 Created", `{"token":"…","scope":"pay"}`}},
		{file: "docs/page.md", line: 10, status: "2xx"},
		{file: "docs/page.md", line: 11, status: "2xx"},
	}
	if ran != 1 || len(checks) != len(want) {
		t.Fatalf("readmeScript: %d blocks ran, checks %+v; want 1 block, %+v", ran, checks, want)
	}
	for i, w := range want {
		if c := checks[i]; c.file != w.file || c.line != w.line || c.status != w.status || !slices.Equal(c.samples, w.samples) {
			t.Errorf("check %d = %+v, want %+v", i, c, w)
		}
	}
	for _, tc := range []struct {
		check           readmeCheck
		headers, output string
		problems        int
	}{
		{want[0], "HTTP/1.1 409 Conflict\r\n", "charged", 0},
		{want[0], "HTTP/1.1 200 OK\r\n", "", 1},
		{want[0], "", "", 1},
		{want[1], "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n", "HTTP/1.1 201 Created\r\n{\"token\":\"6f1c\",\"scope\":\"pay\"}\n", 0},
		{want[1], "HTTP/1.1 201 Created\r\n", "HTTP/1.1 201 Created\r\n[{\"token\":\"6f1c\"}]\n", 1},
		{want[1], "HTTP/1.1 201 Created\r\n", "HTTP/1.1 201 Created\r\n{\"x\":[{\"token\":\"6f1c\",\"scope\":\"pay\"}]}\n", 1},
		{want[2], "HTTP/1.1 204 No Content\r\n", "", 0},
		{want[2], "HTTP/1.1 503 Service Unavailable\r\n", "", 1},
	} {
		if got := tc.check.verify(tc.headers, tc.output); len(got) != tc.problems {
			t.Errorf("verify(%q, %q) for line %d = %q, want %d problems", tc.headers, tc.output, tc.check.line, got, tc.problems)
		}
	}
	// A scenario block: skipped by the walk-through, named for its test.
	sc, err := readmeBlocks("README.md", "<!-- readme-test: scenario: recover: needs a cluster that lost two nodes -->\n```sh\nls\n```\n")
	if err != nil || len(sc) != 1 || sc[0].scenario != "recover" || sc[0].skip == "" {
		t.Errorf("scenario block = %+v, %v; want one skipped block of scenario recover", sc, err)
	}
	// A skip marker without a reason, a scenario without a name or reason,
	// an unclosed block: errors.
	for _, bad := range []string{"<!-- readme-test: skip: -->\n```sh\nls\n```\n", "```sh\nls\n",
		"<!-- readme-test: scenario: recover -->\n```sh\nls\n```\n", "<!-- readme-test: scenario: : why -->\n```sh\nls\n```\n"} {
		if _, err := readmeBlocks("docs/page.md", bad); err == nil || !strings.HasPrefix(err.Error(), "docs/page.md:") {
			t.Errorf("readmeBlocks(%q) = %v, want an error naming docs/page.md and the line", bad, err)
		}
	}
}
