package gateway

import (
	"context"
	"time"

	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/raftstore"
)

// Store is what the gateway and API listeners need from the replicated
// store; *raftstore.Store implements it over Raft. Writes are applied
// wherever they are asked (a follower forwards them to the leader). Reads
// are linearizable unless local is set: a local read sees this node's
// applied state as it is. The listeners never reach past this interface
// into the state machine or Raft, so their behaviour tests run on a store
// in memory (internal/memstore) and a few cluster tests prove the wiring.
type Store interface {
	// Idempotency records.
	Begin(ctx context.Context, r fsm.BeginRequest) (*fsm.Result, error)
	Complete(ctx context.Context, r fsm.CompleteRequest) error
	Release(ctx context.Context, key []byte, fence uint64) error
	Record(ctx context.Context, key []byte, local bool) (*fsm.Record, error)
	// Changed returns a channel closed at the next applied change; a
	// waiter re-reads local state when it fires.
	Changed() <-chan struct{}
	// OnRecordsRemoved registers fn, told after each applied change the
	// keys of the records it removed (released, expired, taken over).
	OnRecordsRemoved(fn func(keys [][]byte))

	// The KV keyspace.
	KV(ctx context.Context, key []byte, local bool) (fsm.KVEntry, error)
	// ApplyKV applies a command of the KV keyspace built by fsm's
	// constructors (fsm.KVSetCommand, ...); refusals are in the result's
	// Code. A SETNX on a live key is answered from a linearizable read.
	ApplyKV(ctx context.Context, c *fsm.Command) (*fsm.Result, error)

	// Form tokens (package tokens builds on these).
	IssueToken(ctx context.Context, key []byte, ttl time.Duration) (time.Time, error)
	ConsumeToken(ctx context.Context, key []byte) error

	// Suspects lists up to limit suspected duplicates, newest first.
	Suspects(ctx context.Context, limit int, local bool) ([]fsm.Suspect, error)

	// The cluster.
	Leader() (id, raftAddr string)
	Servers() ([]raftstore.Server, error)
	// Cluster is the membership as the leader sees it (members,
	// reachability, last contact, match index and lag, all the leader's),
	// or as this node sees it when the leader cannot be asked.
	Cluster(ctx context.Context) (raftstore.ClusterView, error)
	// SetNodeAPI and NodeAPI record and read (locally) the API address of
	// a member added at runtime, in the store's reserved keys.
	SetNodeAPI(ctx context.Context, id, api string) error
	NodeAPI(id string) (string, bool)
	AddVoter(ctx context.Context, id, raftAddr string) error
	AddNonvoter(ctx context.Context, id, raftAddr string) error
	Promote(ctx context.Context, id string, force bool) error
	// RemoveServer removes a member; without force, not when it would
	// leave fewer reachable voters than a quorum.
	RemoveServer(ctx context.Context, id string, force bool) error
	// Removed: this node was removed from the cluster.
	Removed() bool
	// ClusterID is the cluster's id ("" before its first leader gave one).
	ClusterID() string
	// SeenRemoved is Removed as the store last saw it (at most a tenth of
	// a second ago), read without an allocation on the hot path.
	SeenRemoved() bool
	// Barrier waits until this node has applied everything committed
	// before the call (a linearizable read's first half).
	Barrier(ctx context.Context) error
	// Ready: this node can serve writes now: it knows a leader, has
	// applied what it learned was committed, is a member, and nothing
	// stopped it.
	Ready() bool
	// NotReady says why the node is not ready ("" when it is).
	NotReady() string
	// Alive: the node's Raft and state machine still run.
	Alive() bool
	Indexes() (commit, applied uint64)
	// Status is the node's role, term, indexes and readiness.
	Status() raftstore.NodeStatus
	// Backup takes a backup of the state after a linearizable barrier, to
	// be read once and closed (GET /v1/snapshot).
	Backup(ctx context.Context) (*raftstore.Backup, error)
	// TakeSnapshot takes a Raft snapshot on this node now and compacts its
	// log (POST /v1/snapshot).
	TakeSnapshot(ctx context.Context) (raftstore.SnapshotInfo, error)
}

var _ Store = (*raftstore.Store)(nil)
