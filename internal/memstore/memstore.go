// Package memstore is a store for the listeners' behaviour tests: the real
// state machine (package fsm), applied to directly in this process, with no
// Raft and no network. Commands keep their exact semantics (SETNX, fencing,
// TTLs, request-id dedupe, suspects) because they run through the same
// state machine and the same typed operations (raftstore.Commands, with its
// SETNX shortcut) as in a cluster; only replication is missing, so every
// "node" built on one Store sees the same state at once. It never ships in
// the binary.
package memstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/backup"
	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/raftstore"
	"github.com/idemgate/idemgate/storeapi"
	"github.com/idemgate/idemgate/ttl"
)

// ErrNoCluster answers membership changes: a memstore is one node.
var ErrNoCluster = errors.New("memstore: no cluster to change")

// Store applies commands to one state machine, in order.
type Store struct {
	raftstore.Commands
	f   *fsm.FSM
	dir string // the state machine's directory (backups are spooled there)

	mu        sync.Mutex // orders applies
	index     uint64
	changed   chan struct{}
	observers []func(keys [][]byte)
}

// New opens a Store in a temporary directory of tb and runs the expiry
// sweeper (every 50 ms) and the reclaiming of dropped collections until
// tb ends.
func New(tb testing.TB) *Store {
	tb.Helper()
	dir := tb.TempDir()
	f, err := fsm.Open(fsm.Config{Path: filepath.Join(dir, "fsm.db"), NoSync: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		tb.Fatal(err)
	}
	s := &Store{f: f, dir: dir, changed: make(chan struct{})}
	s.Commands = raftstore.Commands{Propose: s.Apply, Read: s.KV}
	f.SetRecordObserver(s.removed)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	sweeper := ttl.NewSweeper(s, ttl.SweeperConfig{Interval: 50 * time.Millisecond}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	go func() { defer close(done); sweeper.Run(ctx) }()
	reclaimed := make(chan struct{})
	go func() { defer close(reclaimed); s.reclaim(ctx) }()
	tb.Cleanup(func() {
		cancel()
		<-done
		<-reclaimed
		f.Close()
	})
	return s
}

// reclaim applies reclaiming commands (noops) while the state machine's
// graveyard holds dropped collections' elements, as a cluster's leader
// proposes them (raftstore's reclaim.go), resting as long as each took.
func (s *Store) reclaim(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		for i := 0; i < 1<<14 && ctx.Err() == nil && s.f.Graves() > 0; i++ {
			start := time.Now()
			if _, err := s.Apply(ctx, command.NoopCommand(nil)); err != nil {
				break
			}
			time.Sleep(time.Since(start))
		}
	}
}

// Graves is fsm.FSM.Graves: the dropped collections whose elements are
// still to reclaim.
func (s *Store) Graves() int64 { return s.f.Graves() }

// Apply stamps c with the wall clock and applies it as the next log entry.
// A command without a request id gets the one ctx carries
// (storeapi.WithRequestID) or a fresh one, as in a cluster.
func (s *Store) Apply(ctx context.Context, c *command.Command) (*command.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.ReqID.IsZero() && c.Type != command.TypeNoop {
		c.ReqID = storeapi.RequestID(ctx)
	}
	s.mu.Lock()
	s.index++
	c.Stamp = time.Now().UnixNano()
	out := s.f.ApplyBatch([]*raft.Log{{Index: s.index, Term: 1, Type: raft.LogCommand, Data: c.Encode(nil)}})
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	res, ok := out[0].(*command.Result)
	if !ok {
		return nil, errors.New("memstore: the state machine answered no result")
	}
	return res, nil
}

// ApplyMany applies cmds as batches of fsm.MaxBatchCommands (one log
// entry each, as a leader's group commit makes them), stamped with the wall
// clock: a test that needs a large state writes it in seconds. It answers
// each command's result, and fails on the first it refused.
func (s *Store) ApplyMany(cmds []*command.Command) (fsm.Results, error) {
	var all fsm.Results
	for len(cmds) > 0 {
		n := min(len(cmds), fsm.MaxBatchCommands)
		enc := make([][]byte, n)
		now := time.Now().UnixNano()
		for i, c := range cmds[:n] {
			if err := c.Validate(); err != nil {
				return nil, err
			}
			if c.ReqID.IsZero() {
				c.ReqID = storeapi.RequestID(context.Background())
			}
			c.Stamp = now
			enc[i] = c.Encode(nil)
		}
		s.mu.Lock()
		s.index++
		out := s.f.ApplyBatch([]*raft.Log{{Index: s.index, Term: 1, Type: raft.LogCommand, Data: fsm.EncodeBatch(enc)}})
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
		res, ok := out[0].(fsm.Results)
		if !ok || len(res) != n {
			return nil, fmt.Errorf("memstore: the state machine answered %T for a batch of %d", out[0], n)
		}
		for i, r := range res {
			if r.Code != command.CodeOK && r.Code != command.CodeCreated {
				return nil, fmt.Errorf("memstore: command %d of the batch: %w", i, r.Err())
			}
		}
		all = append(all, res...)
		cmds = cmds[n:]
	}
	return all, nil
}

func (s *Store) removed(keys [][]byte) {
	for _, fn := range s.observers { // called under s.mu, by Apply
		fn(keys)
	}
}

// OnRecordsRemoved registers fn; every registered fn is told.
func (s *Store) OnRecordsRemoved(fn func(keys [][]byte)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.observers = append(s.observers, fn)
}

// Changed returns a channel closed at the next apply.
func (s *Store) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Reads see the one state there is: local or not, they are linearizable.

func (s *Store) Record(_ context.Context, key []byte, _ bool) (*command.Record, error) {
	return s.f.Record(key, time.Now())
}

func (s *Store) ScanRecords(prefix, from []byte, max int, fn func(key []byte, r *command.Record) error) ([]byte, error) {
	return s.f.ScanRecords(prefix, from, time.Now(), max, fn)
}

func (s *Store) Claim(_ context.Context, key []byte, _ bool) (*command.Claim, error) {
	return s.f.Claim(key, time.Now())
}

func (s *Store) LockState(_ context.Context, name []byte, _ bool) (*command.Lock, error) {
	return s.f.LockState(name, time.Now())
}

func (s *Store) OnLockGrants(fn func(grants []command.LockGrant)) { s.f.SetLockObserver(fn) }

func (s *Store) KV(_ context.Context, key []byte, _ bool) (command.KVEntry, error) {
	if err := storeapi.CheckKeyspaceKey(key); err != nil {
		return command.KVEntry{}, err
	}
	return s.f.KV(key, time.Now())
}

// LeaderKV is raftstore.Store.LeaderKV: one node is its own leader.
func (s *Store) LeaderKV(_ context.Context, key []byte, now time.Time) (command.KVEntry, bool, error) {
	if err := storeapi.CheckKeyspaceKey(key); err != nil {
		return command.KVEntry{}, false, err
	}
	e, err := s.f.KV(key, now)
	if errors.Is(err, command.ErrNotFound) {
		return command.KVEntry{}, false, nil
	}
	return e, err == nil, err
}

// EachKV is raftstore.Store.EachKV.
func (s *Store) EachKV(_ context.Context, _ bool, from []byte, fn func(key []byte) bool) error {
	return s.f.EachKV(from, time.Now(), fn)
}

// ScanKV is raftstore.Store.ScanKV.
func (s *Store) ScanKV(_ context.Context, db int, cursor uint64, count int, fn func(key []byte, kind command.Kind)) (uint64, error) {
	return s.f.ScanKV(db, cursor, count, time.Now(), fn)
}

// LocalTx is raftstore.Store.LocalTx.
func (s *Store) LocalTx(r command.TxRequest) (*command.Result, error) {
	if err := raftstore.CheckTxKeys(r); err != nil {
		return nil, err
	}
	return s.f.ReadTx(r, time.Now())
}

// NodeAPI is raftstore.Store.NodeAPI.
func (s *Store) NodeAPI(id string) (string, bool) {
	e, err := s.f.KV(raftstore.NodeAPIKey(id), time.Now())
	return string(e.Value), err == nil
}

func (s *Store) Suspects(_ context.Context, limit int, _ bool) ([]command.Suspect, error) {
	return s.f.Suspects(limit)
}

func (s *Store) Stuck(_ context.Context, after []byte, limit int, _ bool) ([]command.Stuck, []byte, error) {
	return s.f.Stuck(time.Now(), after, limit)
}

// The cluster: one node, always the leader, always ready.

func (s *Store) Leader() (string, string) { return "mem", "memstore" }
func (s *Store) Servers() ([]storeapi.Server, error) {
	return []storeapi.Server{{ID: "mem", RaftAddr: "memstore", Voter: true, State: "leader"}}, nil
}
func (s *Store) Cluster(context.Context) (storeapi.ClusterView, error) {
	servers, _ := s.Servers()
	servers[0].Reachable = true
	return storeapi.ClusterView{View: "mem", Servers: servers}, nil
}
func (s *Store) AddVoter(context.Context, string, string) error    { return ErrNoCluster }
func (s *Store) AddNonvoter(context.Context, string, string) error { return ErrNoCluster }
func (s *Store) Promote(context.Context, string, bool) error       { return ErrNoCluster }
func (s *Store) RemoveServer(context.Context, string, bool) error  { return ErrNoCluster }
func (s *Store) Removed() bool                                     { return false }
func (s *Store) ClusterID() string                                 { return "" }
func (s *Store) SeenRemoved() bool                                 { return false }
func (s *Store) Barrier(ctx context.Context) error                 { return ctx.Err() }
func (s *Store) NotReady() string                                  { return "" }
func (s *Store) Alive() bool                                       { return true }
func (s *Store) Status() storeapi.NodeStatus {
	commit, applied := s.Indexes()
	return storeapi.NodeStatus{Node: "mem", Role: "leader", Term: 1, Leader: "mem", LastIndex: commit,
		CommitIndex: commit, AppliedIndex: applied}
}
func (s *Store) Indexes() (commit, applied uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.index, s.f.AppliedIndex()
}

// Backup is a real backup file of the state machine, as a one-node
// cluster's at term 1.
func (s *Store) Backup(ctx context.Context) (*storeapi.Backup, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	snap, err := s.f.Snapshot()
	if err != nil {
		return nil, err
	}
	defer snap.Release()
	f, err := backup.Spool(s.dir, snap, backup.Meta{Term: 1, Node: "mem",
		Servers: []backup.Server{{ID: "mem", Raft: "memstore", Voter: true}}})
	if err != nil {
		return nil, err
	}
	return &storeapi.Backup{ReadCloser: f, Index: f.Meta.Index, Term: f.Meta.Term, Size: f.Size}, nil
}

// TakeSnapshot spools a backup of the state machine (a real snapshot of it)
// and describes it as a one-node cluster's snapshot at term 1; there is no
// log to compact.
func (s *Store) TakeSnapshot(ctx context.Context) (storeapi.SnapshotInfo, error) {
	start := time.Now()
	b, err := s.Backup(ctx)
	if err != nil {
		return storeapi.SnapshotInfo{}, err
	}
	defer b.Close()
	return storeapi.SnapshotInfo{Index: b.Index, Term: 1, Bytes: b.Size, Took: time.Since(start), New: true}, nil
}

// The sweeper's Proposer (package ttl).

func (s *Store) VerifyLeader(ctx context.Context) error { return ctx.Err() }
func (s *Store) Due(now time.Time, limit int) ([]ttl.Entry, error) {
	return s.f.Due(now, limit)
}
func (s *Store) CountDue(now time.Time, limit int) (int, error) { return s.f.CountDue(now, limit) }
func (s *Store) Expire(ctx context.Context, entries []ttl.Entry) error {
	_, err := s.Apply(ctx, command.ExpireCommand(entries))
	return err
}

// OnKVChanged registers the state machine's KV observer (one: the last
// registered).
func (s *Store) OnKVChanged(o command.KVObserver) { s.f.SetKVObserver(o) }

// NewSandbox is raftstore.Store.NewSandbox.
func (s *Store) NewSandbox(now int64, base storeapi.SandboxBase, elems storeapi.SandboxElems) storeapi.Sandbox {
	return fsm.NewSandbox(now, base, elems)
}
