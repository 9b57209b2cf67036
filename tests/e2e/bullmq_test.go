package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BullMQ (tests/bullmq: its package.json pins bullmq and ioredis, and
// .ci/run installs them with npm ci) runs unchanged against a 3-node
// cluster's Redis ports, and, as the control, against redis-server: the
// same scripts, the same checks. Without node or the installed packages
// the tests skip, except under CI, where they fail.

// bullmqJobs is the kill test's job count.
const bullmqJobs = 1000

// bullmqWorkers is the kill test's worker processes, spread over the
// nodes, each of concurrency 8.
const bullmqWorkers = 6

// bullmqDeadline bounds each node process of these tests (queue.js and
// readme.js stop themselves past it, saying so), and each of the kill
// test's waits: on a loaded 2-core machine a follower's BullMQ script
// took 0.7 s on average, and the kill test's 1,000 jobs minutes.
const bullmqDeadline = 300 * time.Second

// bullmqHarness is the absolute path of tests/bullmq, once node and its
// installed packages are there.
func bullmqHarness(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("tests", "bullmq"))
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "bullmq", "package.json")); err != nil {
		missing = "tests/bullmq/node_modules lacks bullmq (npm ci in tests/bullmq)"
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(missing + "; .ci/run installs it")
		}
		t.Skip(missing + " (not under CI, so skipping): .ci/run shows how to install it")
	}
	return dir
}

// bullmqCommands are the commands BullMQ sends that a build of idemgate
// may lack: its scripts' XADD and XTRIM, QueueEvents' XREAD, a Worker's
// BZPOPMIN on its marker key.
var bullmqCommands = []string{"xadd", "xtrim", "xread", "bzpopmin"}

// skipWithoutBullMQCommands skips (fails under CI) when the node at addr
// does not know one of bullmqCommands, naming it.
func skipWithoutBullMQCommands(t *testing.T, addr string) {
	t.Helper()
	var missing []string
	for _, name := range bullmqCommands {
		r, err := respCommand(addr, 10*time.Second, "COMMAND", "INFO", name)
		if err != nil {
			t.Fatalf("COMMAND INFO %s: %v", name, err)
		}
		if r.kind != '*' || len(r.elems) != 1 || r.elems[0].kind != '*' {
			missing = append(missing, strings.ToUpper(name))
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("idemgate lacks %s, which BullMQ sends", strings.Join(missing, ", "))
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg + " (not under CI, so skipping)")
}

// respCommand sends one command to addr on a connection of its own and
// reads its reply.
func respCommand(addr string, timeout time.Duration, args ...string) (respReply, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return respReply{}, err
	}
	c := &respConn{nc: nc, r: bufio.NewReader(nc)}
	defer c.close()
	if err := c.send(args...); err != nil {
		return respReply{}, err
	}
	return c.reply(timeout)
}

// bullmqTarget is what the tests run BullMQ against: three idemgate
// processes or one redis-server, with the addresses clients are given
// and the kill the kill test makes.
type bullmqTarget struct {
	name  string
	addrs []string // every node's
	// leader is the address of the leader's node (redis-server's own).
	leader func(t *testing.T) string
	// kill SIGKILLs the target's leader (redis-server itself), waits a
	// moment, starts it again and returns what it killed.
	kill func(t *testing.T) string
}

// startBullMQCluster starts three idemgate processes with Redis ports.
func startBullMQCluster(t *testing.T) *bullmqTarget {
	bin := idemgateBinary(t)
	dir := t.TempDir()
	c := writeCluster(t, dir, "http://127.0.0.1:1", "")
	resps := addRespPorts(t, c)
	nodes := startNodes(t, bin, c.path, c.ids, c.apis)
	waitClusterReady(t, c, c.ids)
	skipWithoutBullMQCommands(t, resps[c.ids[0]])
	tg := &bullmqTarget{name: "idemgate"}
	for _, id := range c.ids {
		tg.addrs = append(tg.addrs, resps[id])
	}
	tg.leader = func(t *testing.T) string { return resps[waitClusterReady(t, c, c.ids)] }
	tg.kill = func(t *testing.T) string {
		leader := waitClusterReady(t, c, c.ids)
		nodes[leader].cmd.Process.Signal(syscall.SIGKILL)
		nodes[leader].cmd.Wait()
		time.Sleep(2 * time.Second) // the survivors elect; clients of the dead node retry
		nodes[leader] = startNode(t, bin, c.path, leader, c.apis[leader])
		return leader
	}
	return tg
}

// startBullMQRedis starts redis-server on a free loopback port with every
// write fsynced (appendonly yes, appendfsync always: so a SIGKILL and a
// restart lose nothing it acknowledged), until the test ends.
func startBullMQRedis(t *testing.T) *bullmqTarget {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server is not installed (.ci/run installs it)")
		}
		t.Skip("redis-server is not installed (apt-get install redis-server)")
	}
	addr := freePorts(t, 1)[0]
	_, port, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
			"--appendfsync", "always", "--dir", dir, "--daemonize", "no", "--loglevel", "warning")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "redis-server listening on "+addr, 20*time.Second, func() bool {
			r, err := respCommand(addr, time.Second, "PING")
			return err == nil && r.str == "PONG"
		})
		return cmd
	}
	cmd := start()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &bullmqTarget{name: "redis-server", addrs: []string{addr}, leader: func(*testing.T) string { return addr }, kill: func(t *testing.T) string {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		time.Sleep(2 * time.Second)
		cmd = start()
		return "redis-server"
	}}
}

// bullmqTargets runs f against a 3-node cluster and against redis-server,
// each as a subtest.
func bullmqTargets(t *testing.T, f func(t *testing.T, harness string, tg *bullmqTarget)) {
	harness := bullmqHarness(t)
	t.Run("idemgate", func(t *testing.T) { f(t, harness, startBullMQCluster(t)) })
	t.Run("redis-server", func(t *testing.T) { f(t, harness, startBullMQRedis(t)) })
}

// nodeProc is a node process of the harness: its command and its output.
type nodeProc struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// startNodeScript starts `node script args…` in the harness directory,
// bounded by bullmqDeadline; it is killed when the test ends.
func startNodeScript(t *testing.T, harness, script string, args ...string) *nodeProc {
	t.Helper()
	p := &nodeProc{cmd: exec.Command("node", append([]string{script}, args...)...)}
	p.cmd.Dir = harness
	p.cmd.Env = append(os.Environ(), "IDEMGATE_BULLMQ_DEADLINE_MS="+strconv.Itoa(int(bullmqDeadline/time.Millisecond)))
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// wait waits for p to exit (killing it past bullmqDeadline and a
// margin) and decodes the JSON line it printed last into v; it fails
// the test when p failed.
func (p *nodeProc) wait(t *testing.T, what string, v any) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(bullmqDeadline + 30*time.Second):
		p.cmd.Process.Kill()
		err = <-done
	}
	out := strings.TrimSpace(p.out.String())
	last := out[strings.LastIndexByte(out, '\n')+1:]
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(last), v); err != nil {
			t.Fatalf("%s printed %q: %v\n%s", what, last, err, out)
		}
	}
}

// runNodeScript runs `node script args…` to its end and decodes its last
// line into v.
func runNodeScript(t *testing.T, harness, what string, v any, script string, args ...string) {
	t.Helper()
	startNodeScript(t, harness, script, args...).wait(t, what, v)
}

// TestE2EBullMQReadme runs BullMQ's README example (readme.js: Queue.add,
// a Worker, QueueEvents, a FlowProducer's tree) against each node of a
// 3-node cluster in turn, and against redis-server: every job completes,
// QueueEvents hears each completion, the flow's parent runs after its
// children and sees their values.
func TestE2EBullMQReadme(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes and node")
	}
	bullmqTargets(t, func(t *testing.T, harness string, tg *bullmqTarget) {
		for _, addr := range tg.addrs {
			var res struct {
				OK        bool
				Why       []string
				FlowOrder []string
			}
			runNodeScript(t, harness, "readme.js against "+addr, &res, "readme.js", addr, "60000")
			if !res.OK {
				t.Errorf("%s, %s: %v", tg.name, addr, res.Why)
			}
			t.Logf("%s, %s: the flow ran %v", tg.name, addr, res.FlowOrder)
		}
	})
}

// TestE2EBullMQKill is the job queue that loses nothing: 1,000 BullMQ jobs
// added (custom ids, each add retried until acknowledged) while six
// worker processes process them (each run appends the job's id to its
// worker's file), two on each node and the producer on the last, as a
// queue's clients spread over a cluster (a follower hands their scripts
// to the leader, where they take turns: docs/redis.md, Job queues; when
// each node ran its clients' scripts, 17 of the 1,000 jobs failed with
// "kept changing under it"); the leader is SIGKILLed once a third are processed, then
// started again, and its clients reconnect to it. Every job completes; a
// job processed more than once only where BullMQ found its lock expired
// and put it back (its stalled counter), and those are counted.
// redis-server (appendfsync always), SIGKILLed and restarted at the same
// point, is the control, every client its own.
func TestE2EBullMQKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes, node workers, and kills the leader")
	}
	bullmqTargets(t, func(t *testing.T, harness string, tg *bullmqTarget) {
		dir := t.TempDir()
		queue := "kill"
		addr := tg.leader(t)
		var files []string
		var workers []*nodeProc
		for i := 0; i < bullmqWorkers; i++ {
			f := filepath.Join(dir, fmt.Sprintf("worker-%d.log", i))
			files = append(files, f)
			workers = append(workers, startNodeScript(t, harness, "queue.js", "work", tg.addrs[i%len(tg.addrs)], queue, f, "8", "20"))
		}
		producer := startNodeScript(t, harness, "queue.js", "produce", tg.addrs[len(tg.addrs)-1], queue, strconv.Itoa(bullmqJobs))

		waitFor(t, "a third of the jobs processed", bullmqDeadline, func() bool {
			runs, _ := readRuns(t, files)
			return len(runs) >= bullmqJobs/3
		})
		killed := tg.kill(t)
		t.Logf("%s: killed %s with %d jobs processed", tg.name, killed, len(must(readRuns(t, files))))

		var added struct {
			Added, Retries int
			Errors         map[string]int
		}
		producer.wait(t, "the producer", &added)
		waitFor(t, "every job processed", bullmqDeadline, func() bool {
			runs, _ := readRuns(t, files)
			return len(runs) == bullmqJobs
		})
		var check struct {
			Completed, PendingCount int
			Pending                 []string
			Stalled                 map[string]int
		}
		deadline := time.Now().Add(bullmqDeadline)
		for {
			runNodeScript(t, harness, "the check", &check, "queue.js", "check", addr, queue, strconv.Itoa(bullmqJobs))
			if check.Completed == bullmqJobs || time.Now().After(deadline) {
				break
			}
			time.Sleep(2 * time.Second)
		}
		for _, w := range workers {
			w.cmd.Process.Signal(syscall.SIGTERM)
		}
		for i, w := range workers {
			w.wait(t, fmt.Sprintf("worker %d", i), nil)
		}
		runs, stalledSeen := readRuns(t, files)
		if check.Completed != bullmqJobs {
			t.Errorf("%s: %d of %d jobs completed; not: %v", tg.name, check.Completed, bullmqJobs, check.Pending)
		}
		again, extraRuns := 0, 0
		for i := 0; i < bullmqJobs; i++ {
			id := fmt.Sprintf("job-%d", i)
			n := runs[id]
			switch {
			case n == 0:
				t.Errorf("%s: %s never processed", tg.name, id)
			case n-1 > check.Stalled[id]:
				t.Errorf("%s: %s processed %d times, its lock expired %d times", tg.name, id, n, check.Stalled[id])
			case n > 1:
				again++
				extraRuns += n - 1
			}
		}
		if len(runs) != bullmqJobs {
			t.Errorf("%s: %d distinct jobs processed, want %d", tg.name, len(runs), bullmqJobs)
		}
		t.Logf("%s: %d jobs added (%d adds retried: %v), %d completed; %d processed again after their lock expired (%d extra runs; stalled counters of %d jobs, %d stalled events heard)",
			tg.name, added.Added, added.Retries, added.Errors, check.Completed, again, extraRuns, len(check.Stalled), stalledSeen)
	})
}

// readRuns reads the workers' files: how often each job was processed,
// and how many "stalled" lines they hold.
func readRuns(t *testing.T, files []string) (map[string]int, int) {
	runs := map[string]int{}
	stalled := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			switch kind, id, _ := strings.Cut(line, " "); kind {
			case "run":
				runs[id]++
			case "stalled":
				stalled++
			}
		}
	}
	return runs, stalled
}

func must[T any](v T, _ ...any) T { return v }
