package bench

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync/atomic"
	"time"
)

// proc is a baseline server process the bench started on loopback.
type proc struct {
	cmd *exec.Cmd
	log *os.File
}

func startProc(dir, name, bin string, args ...string) (*proc, error) {
	log, err := os.Create(dir + "/" + name + ".log")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = log, log, dir
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return &proc{cmd: cmd, log: log}, nil
}

func (p *proc) stop() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
	p.log.Close()
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
