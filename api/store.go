package api

import (
	"context"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/once"
	"github.com/idemgate/idemgate/storeapi"
)

// What the API listener needs from the replicated store, in package
// command's and storeapi's terms, split by concern: each group of
// handlers (handlers.go) holds only the one it calls. *raftstore.Store
// implements them over Raft (package node wires it in), internal/memstore
// in memory for the behaviour tests. Writes are applied wherever they are
// asked (a follower forwards them to the leader); reads are linearizable
// unless local is set (this node's applied state as it is). Form tokens,
// once claims and locks go through the services the API is given
// (services.go), not through these.

// Data is the replicated data the API reads and writes: the KV keyspace,
// the gateway's records, suspected duplicates and stuck work.
type Data interface {
	// KV reads one key of the KV keyspace.
	KV(ctx context.Context, key []byte, local bool) (command.KVEntry, error)
	// ApplyKV applies a KV command built by package command's constructors; refusals are in the result's Code.
	ApplyKV(ctx context.Context, c *command.Command) (*command.Result, error)
	// Record reads an idempotency record (GET /v1/records/KEY).
	Record(ctx context.Context, key []byte, local bool) (*command.Record, error)
	// Release frees a record's key when its fence still holds it (DELETE /v1/records/KEY).
	Release(ctx context.Context, key []byte, fence uint64) error
	// ScanRecords visits this node's records under prefix, a chunk of at
	// most max from the key from on, and says where the next starts
	// (fsm.FSM.ScanRecords; GET /v1/records/export).
	ScanRecords(prefix, from []byte, max int, fn func(key []byte, r *command.Record) error) ([]byte, error)
	// Suspects lists up to limit suspected duplicates, newest first.
	Suspects(ctx context.Context, limit int, local bool) ([]command.Suspect, error)
	// Stuck lists a page of the records and once claims whose holder's
	// deadline passed, and the cursor of the next (nil when none).
	Stuck(ctx context.Context, after []byte, limit int, local bool) ([]command.Stuck, []byte, error)
	// Barrier waits until this node has applied everything committed before the call.
	Barrier(ctx context.Context) error
}

// Membership is the cluster's membership as this node knows it, and the
// changes an administrator makes to it.
type Membership interface {
	// Leader is the leader's id and Raft address as this node knows them ("" when none).
	Leader() (id, raftAddr string)
	// Cluster is the membership as the leader sees it, or as this node does when it cannot ask.
	Cluster(ctx context.Context) (storeapi.ClusterView, error)
	// ClusterID is the cluster's id ("" before its first leader gave one).
	ClusterID() string
	// Indexes are this node's commit and applied indexes.
	Indexes() (commit, applied uint64)
	// SetNodeAPI records the API address of a member added at runtime, in the store's reserved keys.
	SetNodeAPI(ctx context.Context, id, api string) error
	// NodeAPI reads (locally) the API address SetNodeAPI recorded.
	NodeAPI(id string) (string, bool)
	// AddVoter adds a voting member.
	AddVoter(ctx context.Context, id, raftAddr string) error
	// AddNonvoter adds a member that replicates but does not vote.
	AddNonvoter(ctx context.Context, id, raftAddr string) error
	// Promote makes a nonvoter a voter; without force, only a reachable one that has caught up.
	Promote(ctx context.Context, id string, force bool) error
	// RemoveServer removes a member; without force, not when it would leave fewer reachable voters than a quorum.
	RemoveServer(ctx context.Context, id string, force bool) error
	// Removed: this node was removed from the cluster.
	Removed() bool
	// Barrier waits until this node has applied everything committed before the call.
	Barrier(ctx context.Context) error
}

// Node is this node itself: its health, its status and its snapshots.
type Node interface {
	// NotReady says why this node cannot serve writes now ("" when it can): GET /readyz.
	NotReady() string
	// Alive: the node's Raft and state machine still run (GET /healthz).
	Alive() bool
	// Status is the node's role, term, indexes and readiness.
	Status() storeapi.NodeStatus
	// Backup takes a backup of the state after a linearizable barrier, to be read once and closed (GET /v1/snapshot).
	Backup(ctx context.Context) (*storeapi.Backup, error)
	// TakeSnapshot takes a Raft snapshot on this node now and compacts its log (POST /v1/snapshot).
	TakeSnapshot(ctx context.Context) (storeapi.SnapshotInfo, error)
}

// Store is the store a node hands New: the three concerns above, and
// once's (the node builds the once service it hands New over the same
// store; the API never calls it itself).
type Store interface {
	Data
	Membership
	Node
	once.Store
}
