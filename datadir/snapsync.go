package datadir

import (
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	"golang.org/x/sys/unix"
)

// A snapshot is written into the page cache and fsynced once, when it is
// closed: for a large state that is gigabytes of dirty pages flushed at
// once, and every Raft log fsync on the same disk waits behind them
// (writes stalled for seconds while a 1M-key snapshot was synced). The
// sink below writes it out as it goes, as RocksDB's bytes_per_sync does:
// every syncChunk bytes it starts the write-out of the new chunk and waits
// for the one before, so at most two chunks are ever in flight and the
// final fsync has little left to do.
const syncChunk = 8 << 20

// syncingSink starts the write-out of a snapshot's state file as it is
// written. The file is hashicorp/raft's (state.bin in the snapshot's
// temporary directory), opened a second time, read-only: sync_file_range
// works on any descriptor of the file.
type syncingSink struct {
	raft.SnapshotSink
	f               *os.File // nil: write-out left to the final fsync
	written, synced int64
}

// newSyncingSink wraps sink, whose state file is in dir (the snapshot's
// temporary directory).
func newSyncingSink(sink raft.SnapshotSink, dir string) *syncingSink {
	f, _ := os.Open(filepath.Join(dir, "state.bin")) // best effort: without it, the final fsync does it all
	return &syncingSink{SnapshotSink: sink, f: f}
}

func (s *syncingSink) Write(p []byte) (int, error) {
	n, err := s.SnapshotSink.Write(p)
	s.written += int64(n)
	if s.f != nil && s.written-s.synced >= 2*syncChunk {
		fd := int(s.f.Fd())
		// Wait for the older chunk to reach the disk, then start the
		// newer one. Errors are left to the final fsync, which reports
		// them; the bytes written last are still in the sink's buffer
		// and are started by the next call.
		unix.SyncFileRange(fd, s.synced, syncChunk, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
		unix.SyncFileRange(fd, s.synced+syncChunk, syncChunk, unix.SYNC_FILE_RANGE_WRITE)
		s.synced += syncChunk
	}
	return n, err
}

func (s *syncingSink) Close() error {
	s.closeFile()
	return s.SnapshotSink.Close()
}

func (s *syncingSink) Cancel() error {
	s.closeFile()
	return s.SnapshotSink.Cancel()
}

func (s *syncingSink) closeFile() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}
