package raftstore

import (
	"sync"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/storeapi"
)

// A node stops its Raft for good when its disk is nearly full (disk.go),
// when its state machine can no longer write (watchFSM), and when it
// closes. That stop is the node's own state, set once with its reason:
// health, readiness, the metrics and the status read it, never raft's
// state. hashicorp/raft (v1.7.3) sets its state to Shutdown in Shutdown,
// but a goroutine of its own mid-step sets it back afterwards: an
// AppendEntries in flight or a heartbeat handled on the transport's
// goroutine (follower), a heartbeat timeout (candidate), a failed log
// write (follower). A node reading raft's state then answered /healthz 200
// and never exited: a zombie replicating nothing.
//
// Raft's Shutdown returns a future that waits for its goroutines only the
// first time it is called; a second call's waits for nothing. So it is
// called once (stopRaft), its future waited on by one goroutine, and
// whoever closes the stores waits for that (Close, awaitRaft): closing the
// log store under a running follower loop made raft panic ("database not
// open").

// errClosed is the stop reason of a node that was closed.
var errClosed = storeapi.ErrShutdown

// raftStop is a node's stop: once, with its reason.
type raftStop struct {
	once    sync.Once
	stopped chan struct{} // closed when the stop is decided, before raft's Shutdown
	reason  error         // written before stopped closes
	done    chan struct{} // closed once raft's goroutines have ended
}

func newRaftStop() raftStop {
	return raftStop{stopped: make(chan struct{}), done: make(chan struct{})}
}

// stopRaft stops Raft for good, for reason, the first time it is called
// (later calls change nothing), and returns a channel closed once raft's
// goroutines have ended: only then may its stores close.
func (s *Store) stopRaft(reason error) <-chan struct{} {
	s.stop.once.Do(func() {
		s.stop.reason = reason
		close(s.stop.stopped) // /healthz 503 from here on
		f := s.raft.Shutdown()
		go func() {
			f.Error() // waits for raft's goroutines; always nil
			close(s.stop.done)
		}()
	})
	return s.stop.done
}

// Stopped is closed once the node has stopped its Raft for good: its disk
// nearly full, its state machine's storage failed, or Close. `idemgate
// serve` exits then.
func (s *Store) Stopped() <-chan struct{} { return s.stop.stopped }

// StopReason says why the node stopped its Raft (wrapping
// storeapi.ErrDiskFull for the disk guard, storeapi.ErrShutdown for Close);
// nil while it runs.
func (s *Store) StopReason() error {
	select {
	case <-s.stop.stopped:
		return s.stop.reason
	default:
		return nil
	}
}

// raftState is raft's state as the node reports it (metrics, status,
// IsLeader): Shutdown once stopped for good, whatever raft's own says.
func (s *Store) raftState() raft.RaftState {
	select {
	case <-s.stop.stopped:
		return raft.Shutdown
	default:
		return s.raft.State()
	}
}
