//go:build linux

package raftstore

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkConcurrentFdatasync measures what overlapping log writes cost
// on the disk under the test directory: each of n writers appends 4 KiB
// to a file of its own and fdatasyncs it (as bbolt does on Linux), b.N
// times, all n at once. The three nodes of a test cluster share one disk:
// a leader whose write overlaps its followers' puts three fsyncs on it at
// the same moment, instead of one and then two. It reports the mean
// latency of one write and fsync (µs/fsync) and the disk's fsyncs per
// second over all writers: if the latency grows with n as fast as n, the
// disk serializes them and overlapping them gains nothing there.
func BenchmarkConcurrentFdatasync(b *testing.B) {
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("writers=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			files := make([]*os.File, n)
			for i := range files {
				f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("log-%d", i)), os.O_CREATE|os.O_RDWR, 0o600)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				files[i] = f
			}
			page := make([]byte, 4096)
			var (
				wg    sync.WaitGroup
				mu    sync.Mutex
				total time.Duration
				errs  []error
			)
			b.ResetTimer()
			start := time.Now()
			for _, f := range files {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var sum time.Duration
					for i := 0; i < b.N; i++ {
						t := time.Now()
						if _, err := f.WriteAt(page, int64(i)*int64(len(page))); err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
							return
						}
						if err := unix.Fdatasync(int(f.Fd())); err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
							return
						}
						sum += time.Since(t)
					}
					mu.Lock()
					total += sum
					mu.Unlock()
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if len(errs) > 0 {
				b.Fatal(errs[0])
			}
			b.ReportMetric(float64(total.Microseconds())/float64(n*b.N), "µs/fsync")
			b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "fsyncs/s")
		})
	}
}
