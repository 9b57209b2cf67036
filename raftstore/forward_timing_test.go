package raftstore

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// BenchmarkForwardHop: one client's SETNX latency through the leader and
// through a follower (one forwarding round trip more), in one run.
//
//	go test -run XXX -bench ForwardHop -benchtime 2000x ./raftstore
func BenchmarkForwardHop(b *testing.B) {
	c := StartTestCluster(b, 3, nil)
	leader := c.WaitLeader(5 * time.Second)
	for _, tc := range []struct {
		name string
		s    *Store
	}{{"leader", c.Stores[leader]}, {"follower", c.Stores[(leader+1)%3]}, {"leader-again", c.Stores[leader]}} {
		b.Run(tc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if _, err := tc.s.ApplyKV(context.Background(), command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprint(tc.name, i)), Value: []byte("v"), Mode: command.SetNX})); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100])/1e6, "p99-ms")
		})
	}
}
