package transport

import (
	"bufio"
	"encoding/binary"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// BenchmarkLink: messages of 64 bytes from a Link to a peer over loopback,
// batched (what queued while a frame was written goes as one frame) and
// unbatched (a frame and a flush per message). "throughput" publishes b.N
// messages as fast as Send takes them and waits for the last; "latency"
// sends one and waits for it before the next (ns/op is publish to
// receive). Lost messages (none on a healthy loopback link) are reported.
//
//	go test -run XXX -bench BenchmarkLink -benchtime 200000x ./raftstore/transport/
func BenchmarkLink(b *testing.B) {
	for _, mode := range []struct {
		name  string
		write func(*bufio.Writer, int, []byte) error
	}{{"batched", writeBatch}, {"unbatched", writeEach}} {
		b.Run("throughput/"+mode.name, func(b *testing.B) {
			var got atomic.Int64
			var lat []time.Duration // the sink's one connection appends; read after got says all came
			sink := pubSubSink(b, func(_ bool, _, m []byte) {
				lat = append(lat, time.Duration(time.Now().UnixNano()-int64(binary.BigEndian.Uint64(m))))
				got.Add(1)
			})
			l := newLink(func() Peer { return Peer{ID: "p", Addr: sink, Timeout: time.Second, Cluster: command.ClusterID{}} }, 1<<20, mode.write)
			defer l.Close()
			msg := make([]byte, 64)
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				binary.BigEndian.PutUint64(msg, uint64(time.Now().UnixNano()))
				for !l.Send(false, []byte("bench"), msg) {
					time.Sleep(10 * time.Microsecond) // the queue is full: wait for the writer (the benchmark drops nothing)
				}
			}
			for deadline := time.Now().Add(60 * time.Second); got.Load() < int64(b.N) && time.Now().Before(deadline); {
				time.Sleep(100 * time.Microsecond)
			}
			el := time.Since(start)
			b.ReportMetric(float64(got.Load())/el.Seconds(), "msgs/s")
			b.ReportMetric(float64(int64(b.N)-got.Load()), "lost")
			b.ReportMetric(float64(l.Dropped.Load()), "dropped")
			reportPercentiles(b, lat)
		})
		b.Run("latency/"+mode.name, func(b *testing.B) {
			got := make(chan struct{}, 1)
			sink := pubSubSink(b, func(bool, []byte, []byte) { got <- struct{}{} })
			l := newLink(func() Peer { return Peer{ID: "p", Addr: sink, Timeout: time.Second, Cluster: command.ClusterID{}} }, 1<<20, mode.write)
			defer l.Close()
			msg := make([]byte, 64)
			l.Send(false, []byte("warm"), msg)
			<-got
			b.ResetTimer()
			for range b.N {
				l.Send(false, []byte("bench"), msg)
				<-got
			}
		})
	}
}

// reportPercentiles reports the 50th and 99th percentiles of lat in µs.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// writeEach writes the messages of q a frame each, flushing each: the
// benchmark's comparison with writeBatch.
func writeEach(bw *bufio.Writer, _ int, q []byte) error {
	for len(q) > 0 {
		n := 1
		for range 2 {
			l, k := binary.Uvarint(q[n:])
			n += k + int(l)
		}
		payload := append([]byte{1}, q[:n]...)
		if err := writeFrame(bw, tagPubSub, 0, payload); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		q = q[n:]
	}
	return nil
}
