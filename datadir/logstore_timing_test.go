package datadir

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"
)

// BenchmarkLogStoreColdOpen measures opening the Raft log's file from a cold
// page cache (when the benchmark may drop it: root on Linux), as a node
// restarts, at its largest: SnapshotThreshold + TrailingLogs entries
// (16,384 + 10,240) of IDEMGATE_LOG_ENTRY_BYTES (default 8 KiB: a batch of
// some 60 commands), then the 16,384 a snapshot lets go deleted, as Raft
// compacts. Two ways in one run, each as OpenLogStore opens it (the check
// reads the file in order first, then raft-boltdb opens it):
//
//   - rebuilt: the file as a node leaves it, no free list in it: bbolt
//     rebuilds the list by walking every page, from the page cache;
//   - synced: a copy whose free list is written in the file, as fsm.db's is
//     at a clean close: bbolt reads it instead.
//
// It decided that raft.db is closed without its free list: on this machine
// kind rebuilding it cost no more than reading it (8 KiB entries, 275 MB:
// 124 ms rebuilt, 191 ms synced; 512 B entries, 51 MB: 33 and 37 ms).
//
//	IDEMGATE_LOG_ENTRY_BYTES=512 go test -run XXX -bench LogStoreColdOpen -benchtime 3x ./datadir
func BenchmarkLogStoreColdOpen(b *testing.B) {
	size := 8 << 10
	if v, err := fmt.Sscan(os.Getenv("IDEMGATE_LOG_ENTRY_BYTES"), &size); err != nil || v != 1 {
		size = 8 << 10
	}
	dir := b.TempDir()
	legacy := filepath.Join(dir, "raft.db")
	logs, err := raftboltdb.New(raftboltdb.Options{Path: legacy, NoSync: true,
		BoltOptions: &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType}})
	if err != nil {
		b.Fatal(err)
	}
	const keep, compacted = 10240, 16384
	data := make([]byte, size)
	for i := uint64(1); i <= keep+compacted; i += 256 {
		batch := make([]*raft.Log, 0, 256)
		for j := i; j < i+256 && j <= keep+compacted; j++ {
			batch = append(batch, &raft.Log{Index: j, Term: 1, Type: raft.LogCommand, Data: data})
		}
		if err := logs.StoreLogs(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := logs.DeleteRange(1, compacted); err != nil {
		b.Fatal(err)
	}
	if err := logs.Close(); err != nil {
		b.Fatal(err)
	}
	synced := filepath.Join(dir, "synced.db")
	copyFile(b, legacy, synced)
	db, err := bolt.Open(synced, 0o600, &bolt.Options{NoFreelistSync: false, FreelistType: bolt.FreelistMapType})
	if err != nil {
		b.Fatal(err)
	}
	free := db.Stats().FreePageN
	db.Close() // bbolt wrote the free list when it opened it
	st, _ := os.Stat(legacy)
	b.Logf("raft.db %d bytes, %d free pages", st.Size(), free)

	run := func(b *testing.B, open func() (io.Closer, error)) {
		var took time.Duration
		dropped := true
		for i := 0; i < b.N; i++ {
			syscall.Sync()
			dropped = os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0) == nil && dropped
			start := time.Now()
			c, err := open()
			if err != nil {
				b.Fatal(err)
			}
			took += time.Since(start)
			c.Close()
		}
		b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "open-ms")
		if !dropped {
			b.Logf("the page cache could not be dropped: warm figures")
		}
	}
	b.Run("rebuilt", func(b *testing.B) {
		run(b, func() (io.Closer, error) { return OpenLogStore(legacy, true) })
	})
	b.Run("synced", func(b *testing.B) {
		run(b, func() (io.Closer, error) { return OpenLogStore(synced, true) })
	})
}

func copyFile(b *testing.B, from, to string) {
	in, err := os.ReadFile(from)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(to, in, 0o600); err != nil {
		b.Fatal(err)
	}
}
