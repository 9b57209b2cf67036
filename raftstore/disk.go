package raftstore

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// A full disk must be caught before Raft's stores see it: raft-boltdb's
// StableStore failing a write makes hashicorp/raft panic, and a log store
// failing mid-batch leaves the node in a bad state. The disk guard checks
// the data directory's free space every second:
//
//   - below Config.MinFreeBytes the node refuses new writes it would
//     propose or forward (ErrDiskFull: the gateway's 503, fail closed);
//   - below a quarter of that it stops its Raft cleanly (files intact)
//     rather than let a write fail inside Raft; an operator frees space and
//     restarts the node, and it catches up from its peers.

// freeBytes reports the free space of the file system holding dir; a test
// may replace it.
var freeBytes = func(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

func (s *Store) watchDisk(ctx context.Context) {
	if s.cfg.MinFreeBytes == 0 {
		return
	}
	t := time.NewTicker(s.cfg.DiskCheckInterval)
	defer t.Stop()
	for {
		free, err := freeBytes(s.cfg.DataDir)
		if err == nil {
			low := free < s.cfg.MinFreeBytes
			if low != s.diskLow.Load() {
				s.logger.Warn("disk space", "free_bytes", free, "refusing_writes", low)
			}
			s.diskLow.Store(low)
			if free < s.cfg.MinFreeBytes/4 {
				s.logger.Error("disk nearly full: stopping raft before a write fails inside it", "free_bytes", free)
				s.raft.Shutdown()
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Store) checkDisk() error {
	if s.diskLow.Load() {
		return fmt.Errorf("%w: %s has less than %d bytes free", ErrDiskFull, s.cfg.DataDir, s.cfg.MinFreeBytes)
	}
	return nil
}
