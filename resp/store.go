package resp

import (
	"context"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/locks"
	"github.com/idemgate/idemgate/once"
	"github.com/idemgate/idemgate/storeapi"
	"github.com/idemgate/idemgate/tokens"
)

// Store is what the listener needs from the replicated store, in package
// command's and storeapi's terms, so the listener never imports the
// store's packages (raftstore, fsm); *raftstore.Store implements it over
// Raft (package node wires it in), and internal/memstore in one process
// for behaviour tests. Keys
// are named as the state machine stores them, of a keyspace
// (command.KeyspaceKey; the listener maps a client's keys, keyspace.go).
type Store interface {
	// KV reads a key: linearizable unless local (then this node's
	// applied state).
	KV(ctx context.Context, key []byte, local bool) (command.KVEntry, error)
	// LeaderKV reads a key from the leader's applied state (forwarded
	// from a follower), its expiry judged at now; false when absent. It
	// holds every write the leader acknowledged but is no linearizable
	// read: a script's first run on a follower reads through it, and its
	// effects apply only while what it read is unchanged.
	LeaderKV(ctx context.Context, key []byte, now time.Time) (command.KVEntry, bool, error)
	// EachKV calls fn with every live key from from on (storeapi.FirstKVKey:
	// keyspace 0's, reserved keys left out; command.KeyspacePrefix: another
	// keyspace's, then what follows it), in key order, until fn returns
	// false (this node's applied state if local).
	EachKV(ctx context.Context, local bool, from []byte, fn func(key []byte) bool) error
	// ScanKV answers a SCAN step over keyspace db from this node's applied
	// state (the state machine's ScanKV): the keys of up to count index entries from
	// cursor on, and the next cursor (0: done).
	ScanKV(ctx context.Context, db int, cursor uint64, count int, fn func(key []byte, kind command.Kind)) (uint64, error)
	// Barrier returns once this node has applied every write acknowledged
	// before the call: local reads after it are linearizable.
	Barrier(ctx context.Context) error
	// ApplyInOrder applies a pipeline's writes, commands built by package
	// command's constructors, in order (see raftstore). A SETNX on a key that is
	// live is answered from a linearizable read, with no log entry: SET NX
	// on a held lock is a read.
	ApplyInOrder(ctx context.Context, cmds []*command.Command) []storeapi.OpResult
	// ApplyTx applies a transaction (MULTI/EXEC) as one command of the
	// state machine (command.KVTxCommand); its keys are checked first.
	ApplyTx(ctx context.Context, r command.TxRequest) (*command.Result, error)
	// LocalTx answers a transaction of reads only from this node's
	// applied state, in one read (after Barrier, it is linearizable).
	LocalTx(r command.TxRequest) (*command.Result, error)
	// Changed returns a channel closed at this node's next apply: a
	// blocked pop looks at its keys again when it fires.
	Changed() <-chan struct{}
	// OnKVChanged registers the listener to be told the KV keys each
	// batch this node applies changed (client-side caching's
	// invalidations).
	OnKVChanged(o command.KVObserver)
	// NewSandbox returns a sandbox for one run of a script (or of a
	// transaction that holds one) at now, unix nanoseconds, over base
	// and elems (a collection's elements, read as the script asks): the
	// state machine's, so its writes answer as the log will.
	NewSandbox(now int64, base storeapi.SandboxBase, elems storeapi.SandboxElems) storeapi.Sandbox
	// Leader is the leader's id ("" when none is known).
	Leader() (id, raftAddr string)
}

// Once runs once claims (*once.Service).
type Once interface {
	Begin(ctx context.Context, scope, key string, payload []byte, lease time.Duration) (once.Outcome, error)
	Renew(ctx context.Context, scope, key string, fence uint64, lease time.Duration) (time.Time, error)
	Complete(ctx context.Context, scope, key string, fence uint64, result []byte) error
	Release(ctx context.Context, scope, key string, fence uint64) error
}

// Locks runs fair locks (*locks.Service).
type Locks interface {
	Acquire(ctx context.Context, name string, ttl, wait time.Duration) (locks.Held, error)
	Renew(ctx context.Context, name string, fence uint64, ttl time.Duration) (time.Time, error)
	Release(ctx context.Context, name string, fence uint64) error
}

// Tokens issues and spends form tokens (*tokens.Service).
type Tokens interface {
	Issue(ctx context.Context, scope string, ttl time.Duration) (tokens.Token, error)
	Consume(ctx context.Context, scope, token string) error
}
