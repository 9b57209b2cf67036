package e2e

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// servedLog runs `idemgate serve` (a single-node cluster, in front of an
// upstream that refuses connections) with extra flags until it is ready
// and has logged "ready", sends one request (a 502), stops it with SIGTERM,
// and returns what it wrote on stderr.
func servedLog(t *testing.T, ready string, extra ...string) string {
	t.Helper()
	bin := idemgateBinary(t)
	// The upstream is port 1, where nothing listens (as for the other
	// tests' dead upstreams): a free port picked and left unbound could be
	// taken by another process meanwhile, which then answers (seen in CI:
	// a 504 instead of the refusal's 502).
	p := freePorts(t, 3)
	args := append([]string{"serve", "--data-dir", t.TempDir(), "--listen", p[0], "--api-listen", p[1],
		"--raft-listen", p[2], "--upstream", "http://127.0.0.1:1"}, extra...)
	cmd := exec.Command(bin, args...)
	stderr := &testsupport.Logs{}
	cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	waitFor(t, "the node logging that it is ready", 20*time.Second, func() bool {
		return strings.Contains(stderr.String(), ready)
	})
	if r, err := testsupport.Do("GET", "http://"+p[0]+"/anything", ""); err != nil || r.Status != 502 {
		t.Fatalf("GET through a refusing upstream = %d, %v; want 502", r.Status, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve %v: %v\n%s", extra, err, stderr.String())
	}
	return stderr.String()
}

// TestServeLogsJSON: with --log-format json every line on stderr is a JSON
// object, Raft's included, and the node's events are among them; a Raft
// debug line shows only with --log-level debug.
func TestServeLogsJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	for _, level := range []string{"info", "debug"} {
		out := &testsupport.Logs{}
		out.Write([]byte(servedLog(t, `"msg":"ready"`, "--log-format", "json", "--log-level", level)))
		lines, err := out.JSON()
		if err != nil {
			t.Fatalf("--log-level %s: %v", level, err)
		}
		if len(lines) < 8 {
			t.Fatalf("--log-level %s: only %d lines:\n%s", level, len(lines), out.String())
		}
		for _, want := range []struct {
			msg   string
			attrs []string
		}{
			{"entering leader state", []string{"logger", "raft", "level", "INFO", "node", "n1"}},
			{"serving", []string{"node", "n1"}},
			{"leader changed", []string{"leader", "n1"}},
			{"ready", []string{"node", "n1"}},
			{"upstream failed", []string{"status", "502", "error_class", "connection refused", "passthrough", "true"}},
			{"shutting down", nil},
		} {
			if out.Count(want.msg, want.attrs...) != 1 {
				t.Errorf("--log-level %s: %d lines %q %v, want 1:\n%s", level, out.Count(want.msg, want.attrs...), want.msg, want.attrs, out.String())
			}
		}
		raftDebug := 0
		for _, l := range lines {
			if l["logger"] == "raft" && l["level"] == "DEBUG" {
				raftDebug++
			}
		}
		if (raftDebug > 0) != (level == "debug") {
			t.Errorf("--log-level %s: %d Raft debug lines", level, raftDebug)
		}
	}
}

// TestServeLogLevelWarn: --log-level warn hides every info line, Raft's
// included, and keeps Raft's warnings, in the text format.
func TestServeLogLevelWarn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	out := servedLog(t, `msg="heartbeat timeout reached, starting election"`, "--log-level", "warn")
	sawRaftWarn := false
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "time=") {
			t.Errorf("not a text log line: %q", line)
		}
		if !strings.Contains(line, " level=WARN ") && !strings.Contains(line, " level=ERROR ") {
			t.Errorf("--log-level warn shows %q", line)
		}
		sawRaftWarn = sawRaftWarn || strings.Contains(line, "logger=raft")
	}
	if !sawRaftWarn || !strings.Contains(out, `msg="upstream failed"`) {
		t.Errorf("want Raft's warning and the upstream failure:\n%s", out)
	}
}
