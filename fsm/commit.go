package fsm

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// Amortised commits. A bbolt commit costs the same whether its transaction
// wrote one key or a thousand: every page it dirtied is copied out, the
// branch pages above them are rewritten, and the meta page is written. So
// the state machine may keep its write transaction open across the batches
// Raft hands over, and commit it once Config.CommitEvery log entries (or
// maxPendingBytes of them) have gone into it, at the latest
// Config.CommitInterval after the first did. The applied index goes into
// the same transaction as the entries, so the data file is always a state
// the log produced at some index: after a crash, the open transaction is
// gone, the file holds the state at its applied index, and Raft hands over
// the entries above it again (the state machine skips those at or below
// it, see ApplyBatch). Raft's log holds every entry it acknowledged
// (fsynced before the leader counts it); an entry is never acknowledged by
// this file. docs/design.md has the whole argument.
//
// What must hold while a transaction is open:
//   - every read sees every applied entry: a read of one key (Record, KV:
//     the gateway's and SETNX's reads, one per request) is served inside
//     the writer, from the open transaction under its lock (pointView);
//     any other read commits the open transaction first (view) and reads
//     through a read transaction of its own as before. Either waits for a
//     batch being applied into the open transaction; with no transaction
//     open (CommitEvery 1), reads take no lock of the writer's at all;
//   - a snapshot captures a committed state at its applied index (Snapshot
//     commits first), so the log compacted below it is never needed again;
//   - Close commits what is open, Restore commits it before replacing the
//     file, and any other write transaction (ClearClusterID) commits it
//     first: bbolt has one writer, and a second Begin(true) would wait for
//     the open one forever.

// maxPendingBytes bounds the log entries' bytes an open transaction
// gathers: its dirty pages live in memory until it commits.
const maxPendingBytes = 8 << 20

// pending is the write transaction kept open across batches, guarded by mu.
// mu is taken inside FSM.mu (read or write), never the other way.
type pending struct {
	mu      sync.Mutex
	tx      *bolt.Tx
	entries int    // log entries applied in tx
	bytes   int    // their bytes
	applied uint64 // the applied index tx holds
	timer   *time.Timer
	armed   bool          // timer set for tx
	commits atomic.Uint64 // read without mu (metrics)
	// open is set, before the batch's applied index is published, when a
	// batch leaves tx open, and cleared once tx is committed or dropped:
	// a read that finds it clear finds every applied entry committed.
	open atomic.Bool
}

// amortised reports whether the state machine keeps its transaction open
// across batches.
func (f *FSM) amortised() bool { return f.cfg.CommitEvery > 1 }

// writeTx returns the open transaction, or begins one. f.pend.mu is held.
func (f *FSM) writeTx() (tx *bolt.Tx, fresh bool, err error) {
	if f.pend.tx != nil {
		return f.pend.tx, false, nil
	}
	tx, err = f.db.Begin(true)
	return tx, true, err
}

// settle decides, after a batch applied entries (n of them, size bytes)
// into tx up to index applied, whether tx commits now or stays open.
// f.pend.mu is held. It returns the commit's error.
func (f *FSM) settle(tx *bolt.Tx, n, size int, applied uint64) error {
	p := &f.pend
	p.tx, p.applied = tx, applied
	p.entries += n
	p.bytes += size
	if !f.amortised() || p.entries >= f.cfg.CommitEvery || p.bytes >= maxPendingBytes {
		return f.commitPending()
	}
	p.open.Store(true)
	if !p.armed && f.cfg.CommitInterval > 0 {
		p.armed = true
		if p.timer == nil {
			p.timer = time.AfterFunc(f.cfg.CommitInterval, f.commitIdle)
		} else {
			p.timer.Reset(f.cfg.CommitInterval)
		}
	}
	return nil
}

// commitPending commits the open transaction, if any. f.pend.mu is held.
// A failed commit stops the state machine (fail): what it held is in the
// log, and a restart applies it again.
func (f *FSM) commitPending() error {
	p := &f.pend
	if p.tx == nil {
		return nil
	}
	tx := p.tx
	p.tx, p.entries, p.bytes = nil, 0, 0
	defer p.open.Store(false) // after the commit: a read then finds it in the file
	if p.armed {
		p.armed = false
		p.timer.Stop()
	}
	if err := tx.Commit(); err != nil {
		err = fmt.Errorf("fsm: commit: %w", err)
		f.fail(err)
		return err
	}
	p.commits.Add(1)
	f.durable.Store(p.applied)
	return nil
}

// dropPending rolls back the open transaction, if any: a batch failed in
// it, and the state machine stops. f.pend.mu is held.
func (f *FSM) dropPending() {
	p := &f.pend
	if p.tx == nil {
		return
	}
	p.tx.Rollback()
	p.tx, p.entries, p.bytes = nil, 0, 0
	p.open.Store(false)
	if p.armed {
		p.armed = false
		p.timer.Stop()
	}
}

// flush commits the open transaction, if any, so that a read transaction
// begun after it sees every applied entry. f.mu is held (read or write).
func (f *FSM) flush() error {
	if !f.pend.open.Load() {
		return nil
	}
	f.pend.mu.Lock()
	defer f.pend.mu.Unlock()
	if f.pend.tx == nil {
		return nil
	}
	if err := f.commitPending(); err != nil {
		return fmt.Errorf("%w: %v", command.ErrStorage, err)
	}
	return nil
}

// commitIdle is the interval's timer: it commits what has waited
// CommitInterval.
func (f *FSM) commitIdle() {
	f.mu.RLock()
	defer f.mu.RUnlock()
	f.pend.mu.Lock()
	defer f.pend.mu.Unlock()
	if !f.pend.armed {
		return // committed meanwhile
	}
	f.pend.armed = false
	f.commitPending()
}

// DurableIndex is the applied index the data file holds: what a crash of
// the process would leave. It trails AppliedIndex while a transaction is
// open (amortised commits).
func (f *FSM) DurableIndex() uint64 { return f.durable.Load() }

// Commits is how many transactions the state machine has committed since
// it opened.
func (f *FSM) Commits() uint64 { return f.pend.commits.Load() }
