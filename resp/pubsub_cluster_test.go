package resp

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestPubSubAcrossNodesGoRedis: go-redis's PubSub API, as its README shows
// it, against a 3-node cluster: a message published on node A reaches a
// channel subscriber on B, a pattern subscriber on C and a shard channel
// subscriber on B, in order, once each; PUBLISH answers A's own receivers
// (Redis Cluster's count), and PUBSUB answers of each node's own.
func TestPubSubAcrossNodesGoRedis(t *testing.T) {
	tc := startCluster(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clients := make([]*redis.Client, 3)
	for i, addr := range tc.addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: addr, Protocol: 2 + i%2}) // B in RESP3
		defer clients[i].Close()
	}
	a, b, c := clients[0], clients[1], clients[2]
	subB := b.Subscribe(ctx, "orders")
	defer subB.Close()
	subC := c.PSubscribe(ctx, "ord*")
	defer subC.Close()
	shardB := b.SSubscribe(ctx, "jobs")
	defer shardB.Close()
	for _, s := range []*redis.PubSub{subB, subC, shardB} {
		if _, err := s.Receive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := b.PubSubNumSub(ctx, "orders").Result(); err != nil || n["orders"] != 1 {
		t.Fatalf("PUBSUB NUMSUB orders on B = %v, %v", n, err)
	}
	if n, err := a.PubSubNumSub(ctx, "orders").Result(); err != nil || n["orders"] != 0 {
		t.Fatalf("PUBSUB NUMSUB orders on A = %v, %v; want 0: a node answers of its own", n, err)
	}
	if n, err := c.PubSubNumPat(ctx).Result(); err != nil || n != 1 {
		t.Fatalf("PUBSUB NUMPAT on C = %v, %v", n, err)
	}

	// Messages are read in this goroutine (ReceiveTimeout), not through
	// PubSub.Channel: its goroutine (go-redis's health-check pings) stays
	// out of the test.
	recv := func(s *redis.PubSub, d time.Duration) *redis.Message {
		for {
			v, err := s.ReceiveTimeout(ctx, d)
			if err != nil {
				return nil
			}
			if m, ok := v.(*redis.Message); ok {
				return m
			}
		}
	}
	// The links to the peers exist once the members are known: publish
	// until B and C hear (at most once: a message before that may be
	// lost), then drop what else of the warm-up came.
	for i, heard := 0, 0; heard < 2; i++ {
		if i == 400 {
			t.Fatal("B and C never heard A's messages")
		}
		if n, err := a.Publish(ctx, "orders", "warm").Result(); err != nil || n != 0 {
			t.Fatalf("PUBLISH on A = %d, %v; want 0 (no receiver on A)", n, err)
		}
		if heard == 0 && recv(subB, 25*time.Millisecond) != nil {
			heard++
		}
		if heard == 1 && recv(subC, 25*time.Millisecond) != nil {
			heard++
		}
	}
	for _, s := range []*redis.PubSub{subB, subC} {
		for recv(s, 300*time.Millisecond) != nil {
		}
	}

	const n = 200
	for i := range n {
		if err := a.Publish(ctx, "orders", fmt.Sprint(i)).Err(); err != nil {
			t.Fatal(err)
		}
		if err := a.SPublish(ctx, "jobs", fmt.Sprint(i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(who string, s *redis.PubSub, channel, pattern string) {
		t.Helper()
		for i := range n {
			m := recv(s, 20*time.Second)
			if m == nil {
				t.Fatalf("%s got %d of %d messages", who, i, n)
			}
			if m.Channel != channel || m.Pattern != pattern || m.Payload != fmt.Sprint(i) {
				t.Fatalf("%s's message %d = %+v, want %s %q %d", who, i, m, channel, pattern, i)
			}
		}
	}
	expect("B (channel)", subB, "orders", "")
	expect("C (pattern)", subC, "orders", "ord*")
	expect("B (shard channel)", shardB, "jobs", "")

	// On B itself, PUBLISH counts B's receiver.
	if got, err := b.Publish(ctx, "orders", "local").Result(); err != nil || got != 1 {
		t.Fatalf("PUBLISH on B = %d, %v; want 1", got, err)
	}
	if err := subB.Unsubscribe(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		chans, err := b.PubSubChannels(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(chans) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PUBSUB CHANNELS on B after UNSUBSCRIBE = %v", chans)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
