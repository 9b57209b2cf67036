package raftstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/raftstore/transport"
	"github.com/idemgate/idemgate/storeapi"
)

// The grants feed. A lock's waiter learns of its grant from its own node's
// apply of the entry that granted it (OnLockGrants). The leader applies an
// entry as soon as a quorum stored it; a follower only once it learns the
// new commit index, which travels with the leader's next AppendEntries,
// after the leader's next log write: on a hot lock, a waiter on a follower
// waited that long on every hand-over. So a node whose requests wait asks
// the leader for the grants it applies (LeaderLockGrants): one call held
// open until the leader applies a batch that granted a lock, or for
// grantsHold, on the node's forwarding connection, whose writes it does
// not delay (the leader answers it beside them: transport's
// answeredAtOnce). What it tells is committed (a node
// applies only committed entries), so a waiter may act on it at once; the
// waiter's own node applies the same grant later and finds the request
// answered. A feed that is missed (an error, a batch the ring no longer
// holds) costs only that wait: the node's own apply still tells.

const (
	// grantsHold is how long the leader holds a call that finds no new
	// grant: a watcher whose waiters are gone stops within it.
	grantsHold = time.Second
	// grantsRing is how many applied batches the feed keeps for a
	// watcher's next call.
	grantsRing = 64
	// grantsMaxBytes bounds one answer: a watcher that fell behind gets
	// the newest grants that fit, and its node's apply tells the rest.
	grantsMaxBytes = 1 << 20
)

// grantBatch is one applied batch's grants under the feed's sequence.
type grantBatch struct {
	seq    uint64
	grants []command.LockGrant
}

// grantFeed is this node's applied grants, for the watchers of other
// nodes. id names this feed (this process's), so a cursor of another
// leader's feed starts over.
type grantFeed struct {
	id uint64

	mu      sync.Mutex
	seq     uint64
	ring    [grantsRing]grantBatch
	changed chan struct{} // closed and replaced at each publish
}

func newGrantFeed() *grantFeed {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &grantFeed{id: binary.BigEndian.Uint64(b[:]) | 1, changed: make(chan struct{})}
}

// publish records a batch's grants; it runs on the apply path (fsm's lock
// observer), whose slices it must not keep.
func (g *grantFeed) publish(grants []command.LockGrant) {
	own := make([]command.LockGrant, len(grants))
	for i, gr := range grants {
		own[i] = command.LockGrant{Name: append([]byte(nil), gr.Name...), Owner: append([]byte(nil), gr.Owner...),
			Fence: gr.Fence, LeaseEnd: gr.LeaseEnd}
	}
	g.mu.Lock()
	g.seq++
	g.ring[g.seq%grantsRing] = grantBatch{seq: g.seq, grants: own}
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
}

// after returns the grants published after seq (all it holds when fresh:
// a watcher with no cursor of this feed), oldest first, and the sequence
// they reach. ok is false when none are there yet; changed is then closed
// at the next publish.
func (g *grantFeed) after(seq uint64, fresh bool) (grants []command.LockGrant, upTo uint64, changed <-chan struct{}, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !fresh && seq >= g.seq {
		return nil, seq, g.changed, false
	}
	from := uint64(1)
	if g.seq > grantsRing {
		from = g.seq - grantsRing + 1
	}
	if !fresh && seq+1 > from {
		from = seq + 1
	}
	size := 0
	var batches [][]command.LockGrant
	for s := g.seq; s >= from && s > 0; s-- {
		b := g.ring[s%grantsRing].grants
		for _, gr := range b {
			size += len(gr.Name) + len(gr.Owner) + 2*binary.MaxVarintLen64
		}
		if size > grantsMaxBytes {
			break
		}
		batches = append(batches, b)
	}
	for i := len(batches) - 1; i >= 0; i-- {
		grants = append(grants, batches[i]...)
	}
	return grants, g.seq, g.changed, true
}

// wait answers a watcher's call: the grants after its cursor, held up to
// hold for the next batch that has some.
func (g *grantFeed) wait(cursor []byte, hold time.Duration, closing <-chan struct{}) []byte {
	var seq uint64
	fresh := len(cursor) != 16 || binary.BigEndian.Uint64(cursor[:8]) != g.id
	if !fresh {
		seq = binary.BigEndian.Uint64(cursor[8:])
	}
	t := time.NewTimer(hold)
	defer t.Stop()
	for {
		grants, upTo, changed, ok := g.after(seq, fresh)
		if ok {
			return encodeGrants(g.id, upTo, grants)
		}
		select {
		case <-changed:
		case <-t.C:
			return encodeGrants(g.id, upTo, nil)
		case <-closing:
			return encodeGrants(g.id, upTo, nil)
		}
	}
}

// encodeGrants is a feed's answer: cursor (feed id (8) | seq (8)), then per
// grant name and owner (uvarint length, bytes), fence (uvarint) and lease
// end (varint).
func encodeGrants(id, seq uint64, grants []command.LockGrant) []byte {
	out := binary.BigEndian.AppendUint64(nil, id)
	out = binary.BigEndian.AppendUint64(out, seq)
	for _, g := range grants {
		out = binary.AppendUvarint(out, uint64(len(g.Name)))
		out = append(out, g.Name...)
		out = binary.AppendUvarint(out, uint64(len(g.Owner)))
		out = append(out, g.Owner...)
		out = binary.AppendUvarint(out, g.Fence)
		out = binary.AppendVarint(out, g.LeaseEnd)
	}
	return out
}

var errBadGrants = errors.New("grants answer: malformed")

func decodeGrants(b []byte) (cursor [16]byte, grants []command.LockGrant, err error) {
	if len(b) < 16 {
		return cursor, nil, errBadGrants
	}
	copy(cursor[:], b[:16])
	b = b[16:]
	bytesField := func() []byte {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			err = errBadGrants
			return nil
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v
	}
	for len(b) > 0 && err == nil {
		var g command.LockGrant
		g.Name, g.Owner = bytesField(), nil
		if err == nil {
			g.Owner = bytesField()
		}
		if err != nil {
			break
		}
		var k int
		if g.Fence, k = binary.Uvarint(b); k <= 0 {
			err = errBadGrants
			break
		}
		b = b[k:]
		if g.LeaseEnd, k = binary.Varint(b); k <= 0 {
			err = errBadGrants
			break
		}
		b = b[k:]
		grants = append(grants, g)
	}
	return cursor, grants, err
}

// LeaderLockGrants returns the grants the leader applied after cursor (the
// zero cursor: the newest it holds), waiting up to a second for some, and
// the cursor of its next call. Forwarded, it is answered beside the
// connection's writes, never ahead of or behind them; on the leader it
// reads this node's own feed.
func (s *Store) LeaderLockGrants(ctx context.Context, cursor [16]byte) ([]command.LockGrant, [16]byte, error) {
	addr, id := s.raft.LeaderWithID()
	if addr == "" {
		return nil, cursor, storeapi.ErrNoLeader
	}
	var answer []byte
	if string(id) == s.cfg.NodeID {
		answer = s.grants.wait(cursor[:], grantsHold, s.closing)
	} else {
		var err error
		if answer, err = s.forward(ctx, string(id), string(addr), transport.Grants, cursor[:]); err != nil {
			return nil, cursor, err
		}
	}
	next, grants, err := decodeGrants(answer)
	if err != nil {
		return nil, cursor, fmt.Errorf("%w from %s", err, id)
	}
	return grants, next, nil
}
