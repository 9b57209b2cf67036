package gateway

import (
	"context"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/tokens"
)

// The services the gateway uses, each as the small interface it needs of
// it, so the gateway depends on no implementation: the store of records
// and the form tokens.

// Store is what the proxy needs from the replicated store: the idempotency
// records and how this node stands, in package fsm's terms, so the proxy
// never imports the store's package. *raftstore.Store implements it over
// Raft (a follower forwards writes to the leader; package node wires it
// in), internal/memstore in memory for the behaviour tests. Form tokens go
// through Tokens, not through this interface.
type Store interface {
	// Begin claims a key for a request, or answers with what holds it (a stored response, a request in progress).
	Begin(ctx context.Context, r command.BeginRequest) (*command.Result, error)
	// Complete stores the response of the request that holds the key under its fence.
	Complete(ctx context.Context, r command.CompleteRequest) error
	// Release frees a key whose request did not complete, when its fence still holds it.
	Release(ctx context.Context, key []byte, fence uint64) error
	// Record reads a key's record; local reads this node's applied state as it is.
	Record(ctx context.Context, key []byte, local bool) (*command.Record, error)
	// Changed returns a channel closed at the next applied change; a waiter re-reads local state when it fires.
	Changed() <-chan struct{}
	// OnRecordsRemoved registers fn, told after each applied change the keys of the records it removed.
	OnRecordsRemoved(fn func(keys [][]byte))
	// SeenRemoved is whether this node was removed from the cluster, as the store last saw it, read without an allocation.
	SeenRemoved() bool
}

// Tokens is what the gateway needs of form tokens: to issue one (POST
// /_idem/tokens), to spend one (a route that takes them), and the longest
// lifetime it may issue. *tokens.Service implements it; package node
// wires it in.
type Tokens interface {
	// Issue issues a form token in scope for ttl (0: the default).
	Issue(ctx context.Context, scope string, ttl time.Duration) (tokens.Token, error)
	// Consume spends a token: nil exactly once, then tokens.ErrUsed (so for an unknown or expired one); tokens.ErrBadToken for a malformed one.
	Consume(ctx context.Context, scope, token string) error
	// DefaultTTL is the lifetime of a token issued without one, and the longest the gateway issues.
	DefaultTTL() time.Duration
}
