package api

import (
	"context"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/locks"
	"github.com/idemgate/idemgate/once"
	"github.com/idemgate/idemgate/tokens"
)

// The services the API answers for, as the API calls them: a node hands
// New its *tokens.Service, *once.Service and *locks.Service; a test may
// hand it anything that answers the same.

// TokenService issues and spends form tokens (package tokens).
type TokenService interface {
	// Issue issues a token for scope, valid for ttl (the default when 0).
	Issue(ctx context.Context, scope string, ttl time.Duration) (tokens.Token, error)
	// Consume spends a token once; tokens.ErrUsed when it was, or never was.
	Consume(ctx context.Context, scope, token string) error
}

// OnceService runs once claims (package once).
type OnceService interface {
	Begin(ctx context.Context, scope, key string, payload []byte, lease time.Duration) (once.Outcome, error)
	Renew(ctx context.Context, scope, key string, fence uint64, lease time.Duration) (time.Time, error)
	Complete(ctx context.Context, scope, key string, fence uint64, result []byte) error
	Release(ctx context.Context, scope, key string, fence uint64) error
	Get(ctx context.Context, scope, key string) (*command.Claim, error)
}

// LockService runs fair locks (package locks).
type LockService interface {
	Acquire(ctx context.Context, name string, ttl, wait time.Duration) (locks.Held, error)
	Renew(ctx context.Context, name string, fence uint64, ttl time.Duration) (time.Time, error)
	Release(ctx context.Context, name string, fence uint64) error
	Get(ctx context.Context, name string) (*command.Lock, error)
}

var (
	_ TokenService = (*tokens.Service)(nil)
	_ OnceService  = (*once.Service)(nil)
	_ LockService  = (*locks.Service)(nil)
)
