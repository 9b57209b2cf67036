package raftstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/raftstore/transport"
	"github.com/idemgate/idemgate/storeapi"
)

// leaderReadIndex is the read-index recipe on the leader (hashicorp/raft has
// no ReadIndex API; rqlite and Consul do the same): an entry of the current
// term applied, readIndex = CommitIndex, leadership verified by a quorum,
// and the term unchanged throughout.
func (s *Store) leaderReadIndex(ctx context.Context) (uint64, error) {
	if s.raft.State() != raft.Leader {
		return 0, storeapi.ErrNotLeader
	}
	term := s.raft.CurrentTerm()
	if s.barrierTerm.Load() != term {
		// A barrier is an entry of this term; once applied, the commit
		// index covers everything earlier leaders committed.
		timeout := s.cfg.ApplyTimeout
		if dl, ok := ctx.Deadline(); ok {
			timeout = time.Until(dl)
		}
		if err := s.waitFuture(ctx, s.raft.Barrier(timeout)); err != nil {
			return 0, err
		}
		s.barrierTerm.Store(term)
	}
	idx := s.raft.CommitIndex()
	if err := s.waitFuture(ctx, s.raft.VerifyLeader()); err != nil {
		return 0, err
	}
	if s.raft.CurrentTerm() != term {
		return 0, fmt.Errorf("%w: term changed during read", errRetry)
	}
	return idx, nil
}

// ReadIndex returns an index such that, once this node has applied it, its
// state reflects every write acknowledged before the call.
func (s *Store) ReadIndex(ctx context.Context) (uint64, error) {
	if s.refuseRemoved() {
		return 0, storeapi.ErrRemoved
	}
	return leaderCall(s, ctx, transport.ReadIndex,
		func() []byte { return binary.BigEndian.AppendUint64(nil, s.raft.CommitIndex()) }, // nudge.go
		func([]byte) (uint64, error) { return s.leaderReadIndex(ctx) },
		decodeIndex)
}

// Barrier makes the local state linearizable: it returns once this node has
// applied everything acknowledged before the call. Concurrent callers share
// barriers (readgroup.go).
func (s *Store) Barrier(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.ApplyTimeout)
		defer cancel()
	}
	return s.reads.wait(ctx)
}

// barrier is one read index and the wait to apply it: one readGroup round.
func (s *Store) barrier(ctx context.Context) error {
	idx, err := s.ReadIndex(ctx)
	if err != nil {
		return err
	}
	return s.waitApplied(ctx, idx)
}

// waitApplied waits until the state machine has applied every entry up to
// idx that it will ever see. Raft's no-op entries never reach the state
// machine, so when Raft has handed off idx the wait is for the last entry at
// or below idx that does.
func (s *Store) waitApplied(ctx context.Context, idx uint64) error {
	for {
		wake := s.wrap.changed()
		if s.appliedThrough(idx) {
			return nil
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: waiting to apply index %d", storeapi.ErrTimeout, idx)
		case <-wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// appliedThrough reports whether the state machine reflects every entry up
// to idx.
func (s *Store) appliedThrough(idx uint64) bool {
	applied := s.fsm.AppliedIndex()
	if applied >= idx {
		return true
	}
	if s.raft.AppliedIndex() < idx {
		return false
	}
	// Raft has handed off idx: no-ops and barriers above the last entry
	// the state machine applies change nothing.
	last, err := s.stateEntryAbove(idx, applied)
	return err != nil || last == applied // an error: compacted into a snapshot that was restored
}

// stateEntryAbove is the last entry at or below idx and above floor that
// the state machine applies (a command or a configuration; not Raft's
// no-ops and barriers), floor if there is none.
func (s *Store) stateEntryAbove(idx, floor uint64) (uint64, error) {
	var l raft.Log
	for j := idx; j > floor; j-- {
		if err := s.cache.GetLog(j, &l); err != nil {
			return 0, err
		}
		if l.Type == raft.LogCommand || l.Type == raft.LogConfiguration {
			return j, nil
		}
	}
	return floor, nil
}

// maxReadIndexScan bounds how far back lastStateEntry looks.
const maxReadIndexScan = 64

// lastStateEntry lowers a read index idx past the no-ops and barriers
// at its end (at most maxReadIndexScan of them): a follower's read waits
// until it has applied the index, and Raft tells it the commit of the
// last entry only with a later one, so a barrier there (nudge.go's own)
// would leave the next read waiting for yet another. Every write
// acknowledged before the read is a command at or below what it returns.
func (s *Store) lastStateEntry(idx uint64) uint64 {
	floor := idx - min(idx, maxReadIndexScan)
	if j, err := s.stateEntryAbove(idx, floor); err == nil {
		return j
	}
	return idx
}

// Ready reports whether this node knows a leader and has applied up to the
// commit index it has learned: a read here would not be stale by more than
// the replication lag.
// It is false whenever the node cannot serve writes: no leader known, its
// disk guard refusing writes, removed from the cluster, Raft or the state
// machine stopped.
func (s *Store) Ready() bool { return s.notReadyNow() == nil }

// NotReady says why the node is not ready, in a sentence for /readyz; ""
// when it is.
func (s *Store) NotReady() string {
	if r := s.notReadyNow(); r != nil {
		return r.detail
	}
	return ""
}

// notReadyCheck is one reason a node cannot serve writes: a short name for
// logs, a sentence for /readyz.
type notReadyCheck struct {
	reason, detail string
	is             func(*Store) bool
}

// notReadyChecks are checked in order; the first that holds is the reason.
var notReadyChecks = []notReadyCheck{
	{"raft stopped", "this node's Raft or state machine has stopped (see its log); restart it",
		func(s *Store) bool { return !s.Alive() }},
	{"removed", "this node was removed from the cluster; add it again (POST /v1/cluster/nodes on a member) or stop it",
		func(s *Store) bool { return s.Removed() }},
	{"bootstrapping", "forming a new cluster: waiting until every node of the cluster file answers and holds no cluster (see this node's log)",
		func(s *Store) bool { return s.cfg.Bootstrap && s.waiting() }},
	{"waiting", "this node has no cluster yet: it waits to be added (POST /v1/cluster/nodes on a member); start every node with --bootstrap to form a new cluster",
		func(s *Store) bool { return s.waiting() }},
	{"disk low", "the disk is nearly full: writes are refused until space is freed",
		func(s *Store) bool { return s.diskLow.Load() }},
	{"no leader", "no leader is known: the cluster has no quorum, or an election is under way",
		func(s *Store) bool { addr, _ := s.raft.LeaderWithID(); return addr == "" }},
	{"behind on apply", "catching up: applying what the cluster committed",
		func(s *Store) bool { return s.behindOnApply() }},
}

// behindLeader reports whether this follower has not yet applied what its
// leader reported applied a probe period ago. Its own commit index cannot
// tell: a follower whose log replication is stuck keeps hearing heartbeats
// (which carry no commit index) and has applied everything it knows of.
func (s *Store) behindLeader() bool {
	addr, id := s.raft.LeaderWithID()
	if addr == "" || string(id) == s.cfg.NodeID {
		return false
	}
	applied, ok := s.peers.appliedBefore(string(id), probeEvery)
	return ok && s.fsm.AppliedIndex() < applied
}

// notReadyNow is the first reason the node is not ready, nil when it is.
func (s *Store) notReadyNow() *notReadyCheck {
	for i := range notReadyChecks {
		if notReadyChecks[i].is(s) {
			return &notReadyChecks[i]
		}
	}
	return nil
}

// Alive reports whether the node's Raft and state machine still run: false
// for good once the node stopped its Raft (the disk guard, a storage
// failure, Close: stop.go), whatever raft's state says afterwards.
func (s *Store) Alive() bool {
	select {
	case <-s.stop.stopped:
		return false
	case <-s.fsm.Failed():
		return false
	default:
	}
	return s.raft.State() != raft.Shutdown // shut down by a caller of Raft() (tests)
}

// Record returns the record stored under key. Linearizable unless local is
// set; local reads serve the gateway's fast path (a completed record never
// changes until it expires).
func (s *Store) Record(ctx context.Context, key []byte, local bool) (*command.Record, error) {
	if !local {
		if err := s.Barrier(ctx); err != nil {
			return nil, err
		}
	}
	return s.fsm.Record(key, time.Now())
}

// ScanRecords visits this node's records under prefix as they are, a
// chunk of at most max from the key from on (fsm.FSM.ScanRecords): a
// caller that wants every acknowledged write runs Barrier first.
func (s *Store) ScanRecords(prefix, from []byte, max int, fn func(key []byte, r *command.Record) error) ([]byte, error) {
	return s.fsm.ScanRecords(prefix, from, time.Now(), max, fn)
}

// Claim returns the once claim stored under key (fsm.OnceKey),
// linearizable unless local; fsm.ErrNotFound when there is none.
func (s *Store) Claim(ctx context.Context, key []byte, local bool) (*command.Claim, error) {
	if !local {
		if err := s.Barrier(ctx); err != nil {
			return nil, err
		}
	}
	return s.fsm.Claim(key, time.Now())
}

// LockState returns the lock held under name (fsm.CheckLockName),
// linearizable unless local; fsm.ErrNotFound when it is free.
func (s *Store) LockState(ctx context.Context, name []byte, local bool) (*command.Lock, error) {
	if !local {
		if err := s.Barrier(ctx); err != nil {
			return nil, err
		}
	}
	return s.fsm.LockState(name, time.Now())
}

// OnLockGrants registers fn to be told, after each applied batch, the
// locks it granted: the waiters of this node's requests learn of their
// grant from this node's own apply (and sooner from the leader's,
// LeaderLockGrants). fn runs on the apply path and must be quick.
func (s *Store) OnLockGrants(fn func(grants []command.LockGrant)) { s.onGrants.Store(&fn) }

// KV returns the value of a KV key of any keyspace (fsm.KeyspaceKey;
// linearizable unless local); a reserved key is refused
// (storeapi.ErrReservedKey). A face that has keyspace 0 only checks its
// keys with storeapi.CheckKVKey first.
func (s *Store) KV(ctx context.Context, key []byte, local bool) (command.KVEntry, error) {
	if err := storeapi.CheckKeyspaceKey(key); err != nil {
		return command.KVEntry{}, err
	}
	if local || mutantLocalReads {
		return s.fsm.KV(key, time.Now())
	}
	if err := s.Barrier(ctx); err != nil {
		return command.KVEntry{}, err
	}
	return s.linearizableKV(ctx, key)
}

// linearizableKV reads key, after a barrier, judging its expiry by the
// state machine's clock, not this node's. Every write is judged by its
// leader's stamp, taken when it was proposed: a write stamped before an
// expiry may still be in flight when this read runs after it, and will
// find the key live. A read that called the key expired by the wall clock
// would then be followed by a compare-and-set that succeeds on the version
// it said was gone. The state machine's clock never goes back, so what it
// calls expired stays expired for every later entry. When the key is live
// by the state machine's clock but past its expiry by this node's (the
// clock lags real time by the writes in flight, or by up to clockTickEvery
// when idle), an empty command stamped by the leader now moves the clock
// on, and the key is judged again once it is applied here.
func (s *Store) linearizableKV(ctx context.Context, key []byte) (command.KVEntry, error) {
	e, err := s.fsm.KV(key, time.Unix(0, s.fsm.Now()))
	if err != nil || e.ExpiresAt == 0 || e.ExpiresAt > time.Now().UnixNano() {
		return e, err
	}
	if _, err := s.Apply(ctx, command.NoopCommand(nil)); err != nil {
		return command.KVEntry{}, err
	}
	if err := s.Barrier(ctx); err != nil {
		return command.KVEntry{}, err
	}
	return s.fsm.KV(key, time.Unix(0, s.fsm.Now()))
}

// EachKV calls fn with every live KV key of this node's applied state
// from from on (included; storeapi.FirstKVKey, or a keyspace's
// fsm.KeyspacePrefix), in key order, until fn returns false (linearizable
// unless local: a barrier first). from must not name a reserved key's
// range: fn may see them if it does (a keyspace's prefix is a range of
// client keys).
func (s *Store) EachKV(ctx context.Context, local bool, from []byte, fn func(key []byte) bool) error {
	if !local && !mutantLocalReads {
		if err := s.Barrier(ctx); err != nil {
			return err
		}
	}
	return s.fsm.EachKV(from, time.Now(), fn)
}

// ScanKV is a SCAN step over keyspace db from this node's applied state
// (fsm.FSM.ScanKV); the Redis face runs its barrier first.
func (s *Store) ScanKV(_ context.Context, db int, cursor uint64, count int, fn func(key []byte, kind command.Kind)) (uint64, error) {
	return s.fsm.ScanKV(db, cursor, count, time.Now(), fn)
}

// LocalTx answers a transaction of reads only (MULTI/EXEC of GETs, WATCH
// included) from this node's applied state (fsm.FSM.ReadTx): the caller
// runs the barrier first to make it linearizable, as for local KV reads.
// A reserved key is refused (ErrReservedKey).
func (s *Store) LocalTx(r command.TxRequest) (*command.Result, error) {
	if err := CheckTxKeys(r); err != nil {
		return nil, err
	}
	return s.fsm.ReadTx(r, time.Now())
}

// Changed returns a channel closed at this node's next apply: a waiter
// re-reads the local state when it fires.
func (s *Store) Changed() <-chan struct{} { return s.wrap.changed() }

// Suspects lists up to limit suspected duplicates, newest first
// (linearizable unless local).
func (s *Store) Suspects(ctx context.Context, limit int, local bool) ([]command.Suspect, error) {
	if !local {
		if err := s.Barrier(ctx); err != nil {
			return nil, err
		}
	}
	return s.fsm.Suspects(limit)
}

// Stuck lists a page of the records and once claims whose holder's
// deadline passed, earliest first, from the cursor after (fsm.FSM.Stuck);
// linearizable unless local.
func (s *Store) Stuck(ctx context.Context, after []byte, limit int, local bool) ([]command.Stuck, []byte, error) {
	if !local {
		if err := s.Barrier(ctx); err != nil {
			return nil, nil, err
		}
	}
	return s.fsm.Stuck(time.Now(), after, limit)
}

// Indexes are the commit index this node knows and the index its state
// machine has applied.
func (s *Store) Indexes() (commit, applied uint64) {
	return s.raft.CommitIndex(), s.fsm.AppliedIndex()
}

// OnRecordsRemoved registers fn to be told, after each applied batch, the
// keys of the records it removed (released, expired, taken over): caches of
// completed records drop them. fn runs on the apply path and must be quick.
func (s *Store) OnRecordsRemoved(fn func(keys [][]byte)) { s.fsm.SetRecordObserver(fn) }

// OnKVChanged registers o to be told, after each batch this node applies,
// the KV keys it changed, and "all" when a snapshot replaces the state
// (fsm.KVObserver): the listener's client-side caching invalidates from
// it. o runs on the apply path and must be quick.
func (s *Store) OnKVChanged(o command.KVObserver) { s.fsm.SetKVObserver(o) }
