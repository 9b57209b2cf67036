package datadir

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// BenchmarkSnapshotBesideLogFsyncs writes a snapshot of IDEMGATE_SNAP_MB
// (default 512) MB while another goroutine does what the Raft log does on
// every commit, append 4 KB and fsync, and reports that fsync's p99 and
// max: with hashicorp/raft's sink as it is (every byte flushed at the
// final fsync) and with the node's (written out chunk by chunk), in the
// same run.
//
//	go test -run XXX -bench SnapshotBesideLogFsyncs -benchtime 1x ./datadir
func BenchmarkSnapshotBesideLogFsyncs(b *testing.B) {
	mb := 512
	if v, err := strconv.Atoi(os.Getenv("IDEMGATE_SNAP_MB")); err == nil && v > 0 {
		mb = v
	}
	for _, tc := range []struct {
		name    string
		syncing bool
	}{{"final-fsync", false}, {"chunked", true}} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				var store raft.SnapshotStore
				fs, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				store = fs
				if tc.syncing {
					store = privateSnapshots{SnapshotStore: fs, dir: dir}
				}
				log, err := os.Create(filepath.Join(dir, "log"))
				if err != nil {
					b.Fatal(err)
				}
				stop := make(chan struct{})
				lat := make(chan []time.Duration)
				go func() {
					var d []time.Duration
					page := make([]byte, 4096)
					for {
						select {
						case <-stop:
							lat <- d
							return
						default:
						}
						start := time.Now()
						log.Write(page)
						log.Sync()
						d = append(d, time.Since(start))
						time.Sleep(2 * time.Millisecond)
					}
				}()
				_, trans := raft.NewInmemTransport("")
				start := time.Now()
				sink, err := store.Create(raft.SnapshotVersionMax, 10, 1, raft.Configuration{}, 1, trans)
				if err != nil {
					b.Fatal(err)
				}
				chunk := make([]byte, 1<<20)
				for j := range chunk {
					chunk[j] = byte(j * 7)
				}
				for j := 0; j < mb; j++ {
					if _, err := sink.Write(chunk); err != nil {
						b.Fatal(err)
					}
				}
				if err := sink.Close(); err != nil {
					b.Fatal(err)
				}
				took := time.Since(start)
				close(stop)
				d := <-lat
				log.Close()
				slices.Sort(d)
				b.ReportMetric(float64(d[len(d)*99/100])/1e6, "fsync-p99-ms")
				b.ReportMetric(float64(d[len(d)-1])/1e6, "fsync-max-ms")
				b.ReportMetric(took.Seconds(), "snapshot-s")
			}
		})
	}
}
