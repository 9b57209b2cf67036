package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrInUse: another process holds the data directory's lock.
var ErrInUse = errors.New("data dir in use")

// LockFile is the data directory's lock: one node per directory. Without
// it a second `serve` on the same directory waited for bbolt's file lock
// and failed with "fsm: open …/fsm.db: timeout"; now it says who holds it.
const LockFile = "LOCK"

// Lock takes the data directory's lock and writes this process's id into
// it; release gives it up. The lock is flock(2): the kernel drops it when
// the process dies, so a crash leaves no stale lock.
func Lock(dir string) (release func(), err error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("datadir: data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		who := "another process"
		if pid := strings.TrimSpace(string(holder)); pid != "" {
			who = "another idemgate (pid " + pid + ")"
		}
		return nil, fmt.Errorf("%w: %s is held by %s: stop it, or give this node its own data_dir", ErrInUse, dir, who)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	f.Sync()
	return func() {
		f.Truncate(0)
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
