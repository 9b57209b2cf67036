package bench

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
)

// proc is a server process the bench started on loopback: a baseline, or
// a node of the scale scenario's cluster.
type proc struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed once the process has exited
}

// startProc starts bin in dir, its output appended to dir/name.log (a
// process started again under the same name keeps its earlier lines).
func startProc(dir, name, bin string, args ...string) (*proc, error) {
	log, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = log, log, dir
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		log.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop kills the process (SIGKILL) and waits for it.
func (p *proc) stop() {
	p.cmd.Process.Kill()
	<-p.done
}

// term stops the process cleanly (SIGTERM), killing it when it has not
// exited within limit (an error then).
func (p *proc) term(limit time.Duration) error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(limit):
		p.stop()
		return fmt.Errorf("%s did not stop within %s of SIGTERM", filepath.Base(p.cmd.Path), limit)
	}
}

// freePort returns a free loopback address.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// atomicMax keeps the largest value set, from any goroutine.
type atomicMax struct{ v atomic.Int64 }

func (m *atomicMax) set(n int64) {
	for {
		old := m.v.Load()
		if n <= old || m.v.CompareAndSwap(old, n) {
			return
		}
	}
}

func (m *atomicMax) get() int64 { return m.v.Load() }

func waitUntil(timeout time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ok() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
