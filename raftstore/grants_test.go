package raftstore

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/idemgate/idemgate/fsm"
)

// TestLeaderLockGrants: on a real 3-node cluster, a follower's call to the
// leader's feed returns the grant a release on the leader made to a waiter
// queued through the follower, with the fence and lease end the follower's
// own apply then shows; a call with the cursor it got waits for the next
// grant and returns none when there is none.
func TestLeaderLockGrants(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	leader := c.Store(c.WaitLeader(10 * time.Second))
	var follower *Store
	for _, s := range c.Running() {
		if s != leader {
			follower = s
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := []byte("hot")
	held, err := leader.Lock(ctx, fsm.LockAcquireCommand(name, bytes.Repeat([]byte{'a'}, fsm.LockOwnerLen), time.Minute, 0))
	if err != nil || held.Code != fsm.CodeCreated {
		t.Fatalf("acquire: %+v %v", held, err)
	}
	owner := bytes.Repeat([]byte{'b'}, fsm.LockOwnerLen)
	q, err := follower.Lock(ctx, fsm.LockAcquireCommand(name, owner, time.Minute, time.Minute))
	if err != nil || q.Code != fsm.CodeQueued {
		t.Fatalf("queue through the follower: %+v %v", q, err)
	}
	_, cursor, err := follower.LeaderLockGrants(ctx, [16]byte{})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing granted since: the call is held, then answers none.
	if g, next, err := follower.LeaderLockGrants(ctx, cursor); err != nil || len(g) != 0 || next != cursor {
		t.Fatalf("no grant since: %+v, cursor %x (was %x), %v", g, next, cursor, err)
	}
	got := make(chan []fsm.LockGrant, 1)
	go func() {
		for range 20 {
			g, next, err := follower.LeaderLockGrants(ctx, cursor)
			if err != nil {
				t.Error(err)
				break
			}
			cursor = next
			for _, gr := range g {
				if bytes.Equal(gr.Owner, owner) {
					got <- g
					return
				}
			}
		}
		got <- nil
	}()
	if r, err := leader.Lock(ctx, fsm.LockReleaseCommand(name, held.Fence)); err != nil || r.Code != fsm.CodeOK {
		t.Fatalf("release: %+v %v", r, err)
	}
	grants := <-got
	if len(grants) != 1 || !bytes.Equal(grants[0].Name, name) || grants[0].Fence <= held.Fence {
		t.Fatalf("the feed told %+v, want the grant of %q to the waiter, fence above %d", grants, name, held.Fence)
	}
	st, err := follower.LockState(ctx, name, false)
	if err != nil || st.Fence != grants[0].Fence || st.LeaseEnd != grants[0].LeaseEnd || !bytes.Equal(st.Owner, owner) {
		t.Fatalf("the follower's lock %+v %v, the feed's grant %+v", st, err, grants[0])
	}
}

// TestDecodeGrantsHostile: an answer that is cut short, claims lengths it
// does not hold, or ends inside a number is refused, never read past its
// end; a whole one reads back as written.
func TestDecodeGrantsHostile(t *testing.T) {
	grants := []fsm.LockGrant{{Name: []byte("a"), Owner: []byte("owner-1"), Fence: 7, LeaseEnd: -1},
		{Name: []byte("b"), Owner: []byte("owner-2"), Fence: 1 << 40, LeaseEnd: 1 << 60}}
	whole := encodeGrants(3, 9, grants)
	cursor, got, err := decodeGrants(whole)
	if err != nil || len(got) != 2 || got[1].Fence != 1<<40 || got[0].LeaseEnd != -1 || string(got[1].Owner) != "owner-2" ||
		cursor != [16]byte{7: 3, 15: 9} {
		t.Fatalf("round trip: %x %+v %v", cursor, got, err)
	}
	for name, b := range map[string][]byte{
		"empty":              nil,
		"short cursor":       whole[:15],
		"cut in a name":      whole[:17],
		"cut in a number":    whole[:len(whole)-1],
		"length past end":    append(append([]byte(nil), whole[:16]...), 0xff, 0xff, 0xff, 0xff, 0x0f, 'x'),
		"length overflowing": append(append([]byte(nil), whole[:16]...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
		"no lease end":       append(append([]byte(nil), whole[:16]...), 1, 'n', 1, 'o', 5),
	} {
		if _, g, err := decodeGrants(b); err == nil {
			t.Errorf("%s: decoded %+v", name, g)
		}
	}
	if _, g, err := decodeGrants(whole[:16]); err != nil || len(g) != 0 {
		t.Fatalf("a cursor alone: %+v %v", g, err)
	}
}
