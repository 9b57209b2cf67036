package client_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/idemgate/idemgate/client"
)

// BenchmarkKVSetNX is SETNX through the client from 64 goroutines against
// the test cluster (three nodes in this process): cpu-ns/op is the
// process's CPU per write, the clients' and all three nodes', which a
// loaded machine does not inflate as it does the wall time.
//
//	go test -run XXX -bench KVSetNX -benchtime 20000x ./client
func BenchmarkKVSetNX(b *testing.B) {
	c, err := client.New(client.Config{APIs: apis})
	if err != nil {
		b.Fatal(err)
	}
	run := fmt.Sprint(b.N, "-", cpuNow())
	var seq atomic.Int64
	b.SetParallelism(32) // 64 goroutines on 2 cores
	cpu0 := cpuNow()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := fmt.Sprintf("bench-%s-%d", run, seq.Add(1))
			if _, _, err := c.KV.SetNX(context.Background(), k, []byte("v"), 0); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(cpuNow()-cpu0)/float64(b.N), "cpu-ns/op")
}

func cpuNow() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
