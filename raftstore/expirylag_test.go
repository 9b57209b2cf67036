package raftstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// TestReadAfterExpiryBeforeLaggingWrite: a compare-and-set stamped by the
// leader just before a key expires is still being committed (slow links to
// the followers) when a follower's linearizable read runs just after the
// expiry. The write will find the key live (it is judged at its stamp), so
// the read must not call it gone: absent, then a CAS that succeeds on the
// version it said was gone, has no linearization. The read must see the
// key, or the CAS's value once it waited for it.
func TestReadAfterExpiryBeforeLaggingWrite(t *testing.T) {
	h := newHistoryRun(t, func(c *Config) {
		// Links slower than a heartbeat must not start an election: the
		// leader stays, only its commits lag.
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 3*time.Second, 3*time.Second, time.Second
		c.ApplyTimeout = 5 * time.Second
	})
	li := h.c.WaitLeader(10 * time.Second)
	leader, follower := h.c.Stores[li], h.c.Stores[(li+1)%3]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	key := []byte("k")
	res, err := leader.Apply(ctx, command.KVSetCommand(command.KVSetRequest{Key: key, Value: []byte("v1"), Mode: command.SetNX, TTL: 1500 * time.Millisecond}))
	if err != nil || res.Code != command.CodeCreated {
		t.Fatalf("setnx: %v %+v", err, res)
	}
	if err := follower.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range h.c.Cfgs {
		if cfg.NodeID != leader.NodeID() {
			h.net.Delay(leader.NodeID(), cfg.NodeID, 150*time.Millisecond)
		}
	}
	expiry := time.Unix(0, res.ExpiresAt)
	time.Sleep(time.Until(expiry.Add(-100 * time.Millisecond)))
	type casAnswer struct {
		res *command.Result
		err error
	}
	casDone := make(chan casAnswer, 1)
	go func() {
		cas := command.KVSetRequest{Key: key, Value: []byte("v2"), Mode: command.SetCAS, Version: res.Version}
		r, err := leader.Apply(ctx, command.KVSetCommand(cas))
		casDone <- casAnswer{r, err}
	}()
	for !time.Now().After(expiry) {
		time.Sleep(time.Millisecond)
	}
	got, rerr := follower.KV(ctx, key, false)
	cas := <-casDone
	if cas.err != nil {
		t.Fatalf("cas: %v", cas.err)
	}
	t.Logf("read after the expiry: %q %v; the CAS stamped before it: code %d", got.Value, rerr, cas.res.Code)
	if cas.res.Code == command.CodeOK && errors.Is(rerr, command.ErrNotFound) {
		t.Fatal("the read found the key expired, then a CAS on its version succeeded")
	}
	if rerr != nil && !errors.Is(rerr, command.ErrNotFound) {
		t.Fatalf("read: %v", rerr)
	}
}
