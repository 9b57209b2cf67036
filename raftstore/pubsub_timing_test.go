package raftstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// BenchmarkPubSubPath: what a message from one node to another costs by
// the Pub/Sub link (Broadcast on node 0, handed to node 1's listener; one
// at a time, ns/op is publish to receive) beside a write of the same size
// through the Raft log from the same node (ns/op is its commit and apply),
// the path a stored message would take. Both on one 3-node cluster.
//
//	go test -run XXX -bench BenchmarkPubSubPath -benchtime 2000x ./raftstore/
func BenchmarkPubSubPath(b *testing.B) {
	c := StartTestCluster(b, 3, nil)
	leader := c.WaitLeader(10 * time.Second)
	from := (leader + 1) % 3 // a follower, as most nodes a client reaches are
	to := (from + 1) % 3
	got := make(chan struct{}, 1)
	c.Store(to).OnBroadcast(func(bool, []byte, []byte) {
		select {
		case got <- struct{}{}:
		default:
		}
	})
	msg := make([]byte, 64)
	b.Run("link", func(b *testing.B) {
		for i := 0; ; i++ { // the links exist once the members are known
			c.Store(from).Broadcast(false, []byte("warm"), msg)
			select {
			case <-got:
			case <-time.After(25 * time.Millisecond):
				if i == 400 {
					b.Fatal("no link")
				}
				continue
			}
			break
		}
		b.ResetTimer()
		for range b.N {
			c.Store(from).Broadcast(false, []byte("bench"), msg)
			<-got
		}
	})
	b.Run("raft-log", func(b *testing.B) {
		ctx := context.Background()
		for i := range b.N {
			cmd := command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprint("msg", i%64)), Value: msg})
			if _, err := c.Store(from).ApplyKV(ctx, cmd); err != nil {
				b.Fatal(err)
			}
		}
	})
}
