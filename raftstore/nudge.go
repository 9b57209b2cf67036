package raftstore

import (
	"encoding/binary"
	"sync"

	"github.com/hashicorp/raft"
)

// commitNudge tells the followers the commit index now, not at Raft's
// next tick. hashicorp/raft tells a follower the commit index only in an
// AppendEntries that carries entries, or every CommitTimeout (50 to
// 100 ms) when there are none; its heartbeats carry none. A follower's
// linearizable read waits until it has applied the leader's read index,
// so on a quiet cluster a client that writes through a follower and then
// reads there waited for that tick: 78 ms at the median, where the
// leader answers in half a millisecond.
//
// A follower asks the leader for a read index with the commit index it
// knows. When that is below the read index and the leader has appended
// nothing since it took the read index, the leader appends a barrier
// (an entry the state machine never sees): its AppendEntries carries the
// commit index to every follower at once. Had anything been appended, its
// AppendEntries would carry it anyway (it is sent after the commit index
// reached the read index), so under load there is no barrier. One at a
// time: an ask while one runs is taken up after it, with the newest last
// index asked with (that barrier's own entry would not tell a follower
// of a write committed after it).
type commitNudge struct {
	s *Store

	mu      sync.Mutex
	running bool
	again   bool   // asked while running
	last    uint64 // the newest last index asked with, when again
}

// ask appends a barrier unless the log has grown past last (its last
// index when the read index was taken) by the time it runs.
func (n *commitNudge) ask(last uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running {
		n.again, n.last = true, max(n.last, last)
		return
	}
	n.running = true
	go n.run(last)
}

// run appends the barriers asked for, one after another, until none is.
func (n *commitNudge) run(last uint64) {
	for {
		if n.s.raft.LastIndex() == last && n.s.raft.State() == raft.Leader {
			n.s.metrics.commitNudges.Inc()
			_ = n.s.raft.Barrier(n.s.cfg.ApplyTimeout).Error() // a lost leadership ends it: nothing to do
		}
		n.mu.Lock()
		if !n.again {
			n.running = false
			n.mu.Unlock()
			return
		}
		last, n.again, n.last = n.last, false, 0
		n.mu.Unlock()
	}
}

// knownCommit is a follower's read index request: the commit index it
// knows. A follower of an earlier build sends none (false), and a leader
// of an earlier build reads none.
func knownCommit(payload []byte) (uint64, bool) {
	if len(payload) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(payload), true
}
