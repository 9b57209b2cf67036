package raftstore

import (
	"sync"
	"sync/atomic"
	"time"
)

// Readiness that holds under load. A healthy node under steady writes is
// almost never at commit index == applied index: every batch is committed
// a moment before the state machine applies it. Comparing the two at one
// instant made /readyz answer 503 to several percent of polls on a loaded,
// healthy cluster. A node is behind only when it has not applied, a
// readyLag later, what it knew committed (or what its leader had
// applied), or when it is more than readyMaxLag entries behind its commit
// index (a node that restarted or installed a snapshot and is replaying).
//
// Measured by TestReadyUnderLoad (package gateway: three nodes on
// loopback, 923 writes a second for a minute spread over them, a shared
// 2-core machine): commit index - applied index at most 7 entries, a
// follower at most 17 entries behind its leader's applied index, and every
// committed entry applied within 10 ms of the node learning it was
// committed (with the race detector: 13, 14, 24 ms). The bounds below are
// two orders of magnitude above that, and below what a load balancer's
// health check acts on.
const (
	// readyLag: what a node knew committed (or its leader had applied)
	// this long ago, it must have applied.
	readyLag = time.Second
	// readyMaxLag: more entries than this between the commit index and
	// the applied index is behind at once.
	readyMaxLag = 1024
	// healthEvery is how often the commit index, the leader and the
	// removal are sampled (watchEvents).
	healthEvery = 100 * time.Millisecond
)

// health is what the node samples of itself for readiness, for the
// no-leader answer and for the gateway's removed check.
type health struct {
	mu      sync.Mutex
	commits [2 * int(readyLag/healthEvery)]indexAt // the commit index, every healthEvery; newest at next-1
	next    int

	// noLeaderSince is when this node last saw its leader become unknown
	// (Unix nanoseconds); 0 while it knows one.
	noLeaderSince atomic.Int64
	// removed is Removed as last computed: at most healthEvery old, and
	// refreshed by every write this node is asked for.
	removed atomic.Bool
}

// indexAt is an index as of a time.
type indexAt struct {
	at    time.Time
	index uint64
}

// sampleHealth records the commit index, whether a leader is known and
// whether this node was removed, as of now.
func (s *Store) sampleHealth(now time.Time) {
	h := &s.health
	h.mu.Lock()
	h.commits[h.next%len(h.commits)] = indexAt{at: now, index: s.raft.CommitIndex()}
	h.next++
	h.mu.Unlock()
	addr, _ := s.raft.LeaderWithID()
	s.noteLeader(addr != "", now)
	h.removed.Store(s.Removed())
}

// noteLeader records whether a leader is known as of now.
func (s *Store) noteLeader(known bool, now time.Time) {
	if known {
		s.health.noLeaderSince.Store(0)
	} else {
		s.health.noLeaderSince.CompareAndSwap(0, now.UnixNano())
	}
}

// leaderlessSince is when this node last lost its leader, or seen, when it
// is earlier or no loss was recorded yet: the caller saw none at seen.
func (s *Store) leaderlessSince(seen time.Time) time.Time {
	if ns := s.health.noLeaderSince.Load(); ns != 0 && ns < seen.UnixNano() {
		return time.Unix(0, ns)
	}
	return seen
}

// committedBefore is the commit index this node knew at least age ago (and
// at most twice that), if it sampled one.
func (s *Store) committedBefore(age time.Duration, now time.Time) (uint64, bool) {
	h := &s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	var best indexAt
	for _, c := range h.commits {
		if d := now.Sub(c.at); !c.at.IsZero() && d >= age && d <= 2*age && c.at.After(best.at) {
			best = c
		}
	}
	return best.index, !best.at.IsZero()
}

// behindOnApply reports whether this node is really behind: more than
// readyMaxLag entries short of its commit index, or short, now, of what it
// knew committed or its leader had applied readyLag ago.
func (s *Store) behindOnApply() bool {
	return s.behindCommitted(s.raft.CommitIndex(), time.Now()) || s.behindLeader()
}

// behindCommitted is behindOnApply's own half: commit is the commit index
// this node knows now.
func (s *Store) behindCommitted(commit uint64, now time.Time) bool {
	if commit > readyMaxLag && !s.appliedThrough(commit-readyMaxLag) {
		return true
	}
	idx, ok := s.committedBefore(readyLag, now)
	return ok && !s.appliedThrough(idx)
}

// refuseRemoved reports whether this node was removed, as of now, and
// records it for SeenRemoved.
func (s *Store) refuseRemoved() bool {
	r := s.Removed()
	s.health.removed.Store(r)
	return r
}

// SeenRemoved reports, without allocating while the node is a member,
// whether this node has seen itself removed from the cluster: Removed as
// of at most a tenth of a second ago, or as of the last write it was asked
// for. A removal seen is checked again before it is reported, so a node
// added back (or one that installed a snapshot taken before it was added,
// removed until the entry adding it arrives) serves as soon as readyz says
// it may. The gateway's hot path reads it; writes check Removed itself.
func (s *Store) SeenRemoved() bool {
	if !s.health.removed.Load() {
		return false
	}
	return s.refuseRemoved()
}
