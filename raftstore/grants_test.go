package raftstore

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
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
	held, err := leader.Lock(ctx, command.LockAcquireCommand(name, bytes.Repeat([]byte{'a'}, command.LockOwnerLen), time.Minute, 0))
	if err != nil || held.Code != command.CodeCreated {
		t.Fatalf("acquire: %+v %v", held, err)
	}
	owner := bytes.Repeat([]byte{'b'}, command.LockOwnerLen)
	q, err := follower.Lock(ctx, command.LockAcquireCommand(name, owner, time.Minute, time.Minute))
	if err != nil || q.Code != command.CodeQueued {
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
	got := make(chan []command.LockGrant, 1)
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
	if r, err := leader.Lock(ctx, command.LockReleaseCommand(name, held.Fence)); err != nil || r.Code != command.CodeOK {
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
	grants := []command.LockGrant{{Name: []byte("a"), Owner: []byte("owner-1"), Fence: 7, LeaseEnd: -1},
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

// TestGrantFeed: a watcher with no cursor of the feed gets what it holds
// at once; with the cursor it got, nothing is there until the next
// publish (its call is held: not answered empty again and again), then
// exactly the batches after it; a cursor older than the ring gets the
// ring; a cursor of another feed starts over; the slices the apply path
// passed are not kept.
func TestGrantFeed(t *testing.T) {
	g := newGrantFeed()
	cursor := func(seq uint64) []byte {
		var c [16]byte
		copy(c[:], encodeGrants(g.id, seq, nil))
		return c[:]
	}
	if _, upTo, _, ok := g.after(0, true); !ok || upTo != 0 {
		t.Fatalf("fresh on an empty feed: ok %v, up to %d", ok, upTo)
	}
	_, _, changed, ok := g.after(0, false)
	if ok {
		t.Fatal("nothing published: a watcher with the cursor is answered at once")
	}
	name, owner := []byte("hot"), []byte("owner-1")
	g.publish([]command.LockGrant{{Name: name, Owner: owner, Fence: 5, LeaseEnd: 9}})
	name[0], owner[0] = 'X', 'X' // the apply path's memory, reused
	select {
	case <-changed:
	default:
		t.Fatal("a publish did not wake the held call")
	}
	_, grants, err := decodeGrants(g.wait(cursor(0), time.Hour, nil))
	if err != nil || len(grants) != 1 || string(grants[0].Name) != "hot" || string(grants[0].Owner) != "owner-1" || grants[0].Fence != 5 {
		t.Fatalf("after the publish: %+v %v", grants, err)
	}
	for i := range 2 * grantsRing {
		g.publish([]command.LockGrant{{Name: []byte("k"), Owner: []byte("o"), Fence: uint64(10 + i)}})
	}
	got, upTo, _, ok := g.after(1, false)
	if !ok || upTo != 1+2*grantsRing || len(got) != grantsRing || got[0].Fence != 10+grantsRing || got[len(got)-1].Fence != 10+2*grantsRing-1 {
		t.Fatalf("a cursor older than the ring: %d grants up to %d, first %+v", len(got), upTo, got[0])
	}
	if got, _, _, _ := g.after(upTo-2, false); len(got) != 2 || got[0].Fence != 10+2*grantsRing-2 {
		t.Fatalf("two batches behind: %+v", got)
	}
	other := newGrantFeed()
	if _, grants, err := decodeGrants(other.wait(cursor(upTo), time.Hour, nil)); err != nil || len(grants) != 0 {
		t.Fatalf("another feed's cursor on an empty feed: %+v %v", grants, err)
	}
}
