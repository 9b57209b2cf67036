package raftstore

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/idemgate/idemgate/storeapi"
)

// A full disk must be caught before Raft's stores see it: raft-boltdb's
// StableStore failing a write makes hashicorp/raft panic, and a log store
// failing mid-batch leaves the node in a bad state. The disk guard checks
// the data directory's free space every second:
//
//   - below Config.MinFreeBytes the node refuses new writes it would
//     propose or forward (storeapi.ErrDiskFull: the gateway's 503, fail closed);
//   - below a quarter of that it stops its Raft cleanly (files intact)
//     rather than let a write fail inside Raft, for good: the node answers
//     /healthz 503 from then on (stopRaft) and `idemgate serve` exits 1; an
//     operator frees space and restarts the node, and it catches up from
//     its peers.

// freeBytes reports the free space of the file system holding dir; a test
// may replace it.
var freeBytes = func(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// watchDisk measures the free space (idemgate_disk_free_bytes) and, with
// MinFreeBytes set, guards it.
func (s *Store) watchDisk(ctx context.Context) {
	every := s.cfg.DiskCheckInterval
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		free, err := freeBytes(s.cfg.DataDir)
		if err == nil {
			s.diskFree.Store(free)
		}
		if err == nil && s.cfg.MinFreeBytes > 0 {
			low := free < s.cfg.MinFreeBytes
			switch was := s.diskLow.Swap(low); {
			case low && !was:
				s.logger.Warn("disk nearly full: refusing writes until space is freed", "free_bytes", free, "min_free_bytes", s.cfg.MinFreeBytes)
			case !low && was:
				s.logger.Info("disk space recovered: accepting writes again", "free_bytes", free)
			}
			if free < s.cfg.MinFreeBytes/4 {
				s.logger.Error("disk nearly full: stopping raft before a write fails inside it", "free_bytes", free)
				s.stopRaft(fmt.Errorf("%w: %s has %d bytes free, under a quarter of min_free (%d): free space and restart the node",
					storeapi.ErrDiskFull, s.cfg.DataDir, free, s.cfg.MinFreeBytes))
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
		return fmt.Errorf("%w: %s has less than %d bytes free", storeapi.ErrDiskFull, s.cfg.DataDir, s.cfg.MinFreeBytes)
	}
	return nil
}
