package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// diskFullRounds is how many pause-and-fill rounds TestE2EDiskFullStop
// runs (IDEMGATE_DISKFULL_ROUNDS overrides it; the chaos build runs 60).
// Before the disk guard's stop was a state of the node's own, about one
// round in fourteen left a zombie on this machine kind (10 of 139): 12
// rounds catch it about three times in five, 60 nearly always. The race
// itself is reproduced deterministically in process by raftstore's
// TestDiskGuardStopIsFinal; this test holds the real process to the whole
// promise: exit 1, no panic, the reason in its last line (one of Raft's
// after it, as 6 of 90 rounds had, means Raft outlived the close).
var diskFullRounds = 12

// TestE2EDiskFullStop: the disk guard's stop is final and visible. Three
// `idemgate serve` processes, each on a tmpfs data directory of its own,
// take writes from 32 clients; round after round one node is paused
// (SIGSTOP) for 3 s while its disk is filled to 6 MiB free (below a
// quarter of min_free: 32 MiB), then resumed. Waking, it finds its heartbeat
// timer expired, a new leader's higher term on the wire and its disk full,
// all at once. It must exit 1, saying why in its last line; never panic
// (exit 2), and never keep running as a zombie whose /healthz answers 200
// (raft's state set back to follower or candidate after the guard's stop,
// replicating nothing). Then space is freed and it rejoins.
func TestE2EDiskFullStop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs per node: Linux, as root")
	}
	rounds := diskFullRounds
	if n, err := strconv.Atoi(os.Getenv("IDEMGATE_DISKFULL_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	bin := idemgateBinary(t)
	dir := t.TempDir()
	c := writeCluster(t, dir, "http://127.0.0.1:1", "")
	b, err := os.ReadFile(c.path)
	if err != nil {
		t.Fatal(err)
	}
	const raftLine = "election_timeout: 500ms}"
	if strings.Count(string(b), raftLine) != 1 {
		t.Fatalf("the cluster file has no %q:\n%s", raftLine, b)
	}
	cfg := strings.Replace(string(b), raftLine, "election_timeout: 500ms, min_free: 32MiB}", 1)
	if err := os.WriteFile(c.path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]*fullNode{}
	for _, id := range c.ids {
		mountTmpfs(t, filepath.Join(dir, id), "256m")
	}
	for _, id := range c.ids { // after the mounts: their cleanups (kill) run before the unmounts
		n := &fullNode{id: id, api: c.apis[id], bin: bin, cfg: c.path}
		nodes[id] = n
		n.start(t)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("--- %s's last run (readyz %d):\n%s", id, readyz(n.api), tail(n.log.String(), 30))
			}
			n.kill()
		})
	}
	waitClusterReady(t, c, c.ids)

	// The writers send to every node: those sending to the paused one wait
	// for it, and wake with it.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				api := c.apis[c.ids[(w+i)%3]]
				httpDo("PUT", fmt.Sprintf("http://%s/v1/kv/w%d-%d", api, w, i%256), strings.Repeat("v", 200))
			}
		}()
	}
	defer wg.Wait()
	defer close(stop)

	var clean, zombies, panics, other int
	for round := 0; round < rounds; round++ {
		n := nodes[c.ids[round%3]]
		data := filepath.Join(dir, n.id)
		time.Sleep(500 * time.Millisecond) // the writers reach every node
		n.cmd.Process.Signal(syscall.SIGSTOP)
		paused := time.Now()
		filler := filepath.Join(data, "filler")
		if err := fillTo(filler, data, 6<<20); err != nil {
			n.cmd.Process.Signal(syscall.SIGCONT)
			t.Fatal(err)
		}
		time.Sleep(3*time.Second - time.Since(paused))
		n.cmd.Process.Signal(syscall.SIGCONT)
		resumed := time.Now()

		// The guard checks every second: give it ten, then look.
		select {
		case <-n.done:
		case <-time.After(10 * time.Second):
		}
		outcome := ""
		switch code := n.exitCode(); {
		case code == 1 && !strings.Contains(n.log.String(), "panic:"):
			clean++
			if !strings.Contains(n.lastLine(), "raft stopped: disk nearly full") {
				t.Errorf("round %d: %s exited 1, but its last line does not say the disk stopped it: %q", round, n.id, n.lastLine())
			}
			outcome = fmt.Sprintf("exit 1 %.1fs after SIGCONT: %s", time.Since(resumed).Seconds(), n.lastLine())
			if time.Since(resumed) > 1500*time.Millisecond { // the guard checks every second; what held it?
				outcome += "\n" + tail(n.log.String(), 15)
			}
		case code >= 0 || strings.Contains(n.log.String(), "panic:") || n.exitedBySignal():
			panics++
			outcome = fmt.Sprintf("exit %d", code)
			t.Errorf("round %d: %s exited %d (want 1, no panic):\n%s", round, n.id, code, tail(n.log.String(), 40))
		default:
			code, _, body, err := httpDo("GET", "http://"+n.api+"/healthz", "")
			switch {
			case code == 200:
				zombies++
				outcome = "zombie"
				_, _, metrics, _ := httpDo("GET", "http://"+n.api+"/metrics", "")
				t.Errorf("round %d: %s still runs 10 s after its disk filled, /healthz 200 (%s):\n%s", round, n.id,
					metricLine(metrics, "idemgate_raft_state"), tail(n.log.String(), 20))
			case code == 503: // stopped, and saying so: still on its way out (docs: within a second)
				other++
				outcome = fmt.Sprintf("running, healthz 503 %s", strings.TrimSpace(body))
			default:
				panics++
				outcome = fmt.Sprintf("running, healthz %d %v", code, err)
				t.Errorf("round %d: %s still runs 10 s after its disk filled, /healthz %d %v (want 503, or exit 1):\n%s",
					round, n.id, code, err, tail(n.log.String(), 20))
			}
			n.kill()
		}
		t.Logf("round %d: %s: %s", round, n.id, outcome)
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		n.start(t)
		waitClusterReady(t, c, c.ids)
	}
	t.Logf("%d rounds: %d clean exits, %d zombies, %d panics or other failures, %d still running with /healthz 503 after 10 s",
		rounds, clean, zombies, panics, other)
}

// fullNode is one `idemgate serve` process of TestE2EDiskFullStop,
// restarted round after round on the same data directory.
type fullNode struct {
	id, api, bin, cfg string
	cmd               *exec.Cmd
	log               *testsupport.Buffer
	done              chan struct{} // closed once cmd has exited and been reaped
}

func (n *fullNode) start(t *testing.T) {
	t.Helper()
	n.log = &testsupport.Buffer{}
	n.cmd = exec.Command(n.bin, "serve", "--config", n.cfg, "--node", n.id, "--log-level", "warn", "--bootstrap")
	n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done, cmd := make(chan struct{}), n.cmd
	go func() { cmd.Wait(); close(done) }()
	n.done = done
}

// exitCode is the process's exit code, -1 while it runs (or if a signal
// ended it).
func (n *fullNode) exitCode() int {
	select {
	case <-n.done:
		return n.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// exitedBySignal reports whether the process has ended by a signal.
func (n *fullNode) exitedBySignal() bool {
	select {
	case <-n.done:
		return n.cmd.ProcessState.ExitCode() < 0
	default:
		return false
	}
}

// kill ends the process (paused or not) and waits until it is reaped.
func (n *fullNode) kill() {
	if n.cmd == nil {
		return
	}
	n.cmd.Process.Signal(syscall.SIGCONT)
	n.cmd.Process.Kill()
	<-n.done
}

// lastLine is the last non-empty line the process wrote.
func (n *fullNode) lastLine() string {
	lines := strings.Split(strings.TrimSpace(n.log.String()), "\n")
	return lines[len(lines)-1]
}

// mountTmpfs mounts a tmpfs of size at dir (created), unmounted when the
// test ends however it ends.
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs at %s: %v %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s (unmounting lazily)", dir, err, out)
			exec.Command("umount", "-l", dir).Run()
		}
	})
}

// fillTo writes path until the file system holding dir has about free
// bytes left (none written when it has less already).
func fillTo(path, dir string, free uint64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return err
	}
	have := st.Bavail * uint64(st.Bsize)
	if have <= free {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = 'x'
	}
	for left := have - free; left > 0; {
		k := min(left, uint64(len(chunk)))
		if _, err := f.Write(chunk[:k]); err != nil {
			return fmt.Errorf("fill %s: %w", path, err)
		}
		left -= k
	}
	return nil
}

// metricLine is the sample line of name in a /metrics answer.
func metricLine(metrics, name string) string {
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	return name + " absent"
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
