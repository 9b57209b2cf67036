// Package once runs work at most once per (scope, key) for the faces (the
// HTTP API, the Redis protocol): a begin, a lease renewed while the work
// runs, a complete that stores the result, or a release when it failed.
// The state machine holds the claim (command.Claim); this package checks the
// caller's input, picks the scope's retention, and counts what happened.
package once

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/fence"
	"github.com/idemgate/idemgate/tokens"
)

// Errors of once operations.
var (
	// ErrKeyReuse: the key's claim was begun with another payload.
	ErrKeyReuse = command.ErrKeyReuse
	// ErrStaleFence: the fence no longer holds the claim (its lease ran
	// out and another took it over, it was released, completed with
	// another result, or is past its retention).
	ErrStaleFence = errors.New("the fence no longer holds the claim")
	// ErrBadLease: a lease that is not positive or over MaxLease.
	ErrBadLease = fmt.Errorf("lease must be positive and at most %s", MaxLease)
)

// MaxLease bounds a lease: a holder renews a longer piece of work.
const MaxLease = 24 * time.Hour

// Store is what once needs from the replicated store.
type Store interface {
	// Once applies a once command; refusals are in the result's Code.
	Once(ctx context.Context, c *command.Command) (*command.Result, error)
	// Claim reads a claim (command.ErrNotFound), linearizable unless local.
	Claim(ctx context.Context, key []byte, local bool) (*command.Claim, error)
}

// Outcome is what a begin answered.
type Outcome struct {
	// State is command.ClaimBegun (yours: do the work under Fence until
	// LeaseEnd), command.ClaimCompleted (Result is the stored result), or 0
	// while another holder's lease is live (until LeaseEnd).
	State     command.ClaimState
	Fence     uint64
	LeaseEnd  time.Time
	Result    []byte
	TakenOver bool // yours, taken over from a holder whose lease ran out
}

// Service runs once claims over a store.
type Service struct {
	store     Store
	retention func(scope string) time.Duration
	begun     prometheus.Counter
	completed prometheus.Counter
	replayed  prometheus.Counter
	takenOver prometheus.Counter
	stale     prometheus.Counter
}

// New returns a Service; retention is a scope's retention (the cluster
// file's once section).
func New(store Store, retention func(scope string) time.Duration) *Service {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "idemgate_once_" + name + "_total", Help: help})
	}
	return &Service{store: store, retention: retention,
		begun:     c("begun", "Once claims handed to a first caller."),
		completed: c("completed", "Once claims completed with a result."),
		replayed:  c("replayed", "Begins answered with a completed claim's stored result."),
		takenOver: c("taken_over", "Once claims taken over from a holder whose lease ran out."),
		stale:     c("stale_completes", "Completes refused because another caller took the claim over."),
	}
}

// Register registers the once metrics.
func (s *Service) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Counter{s.begun, s.completed, s.replayed, s.takenOver, s.stale} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// key checks scope (the form tokens' rules: tokens.ErrBadScope) and builds
// the claim's stored key; the face checks the caller's key.
func key(scope, k string) ([]byte, error) {
	if err := tokens.CheckScope(scope); err != nil {
		return nil, err
	}
	return command.OnceKey(scope, k), nil
}

func checkLease(d time.Duration) error {
	if d <= 0 || d > MaxLease {
		return fmt.Errorf("%w: %s", ErrBadLease, d)
	}
	return nil
}

// Begin claims (scope, k) for payload with a lease: yours (State begun),
// done (State completed, with the result), or held by another (State 0);
// ErrKeyReuse when the claim is another payload's.
func (s *Service) Begin(ctx context.Context, scope, k string, payload []byte, lease time.Duration) (Outcome, error) {
	sk, err := key(scope, k)
	if err != nil {
		return Outcome{}, err
	}
	if err := checkLease(lease); err != nil {
		return Outcome{}, err
	}
	res, err := s.store.Once(ctx, command.OnceBeginCommand(sk, command.OnceFingerprint(payload), lease, s.retention(scope)))
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{Fence: res.Fence, LeaseEnd: time.Unix(0, res.ExpiresAt)}
	switch res.Code {
	case command.CodeCreated:
		s.begun.Inc()
		out.State = command.ClaimBegun
	case command.CodeTakenOver:
		s.takenOver.Inc()
		out.State, out.TakenOver = command.ClaimBegun, true
	case command.CodeOK:
		s.replayed.Inc()
		out.State, out.Result, out.LeaseEnd = command.ClaimCompleted, res.Value, time.Time{}
	case command.CodeExists:
	default:
		return Outcome{}, res.Err()
	}
	return out, nil
}

// Renew extends the lease of the holder of fence to lease from now and
// returns its new end; ErrStaleFence once the lease was lost.
func (s *Service) Renew(ctx context.Context, scope, k string, fence uint64, lease time.Duration) (time.Time, error) {
	sk, err := key(scope, k)
	if err != nil {
		return time.Time{}, err
	}
	if err := checkLease(lease); err != nil {
		return time.Time{}, err
	}
	res, err := s.fenced(ctx, command.OnceRenewCommand(sk, fence, lease))
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, res.ExpiresAt), nil
}

// Complete stores the result of the holder of fence; ErrStaleFence when
// another took the claim over (its result is kept, this one is not).
func (s *Service) Complete(ctx context.Context, scope, k string, fence uint64, result []byte) error {
	sk, err := key(scope, k)
	if err != nil {
		return err
	}
	_, err = s.fenced(ctx, command.OnceCompleteCommand(sk, fence, result, s.retention(scope)))
	switch {
	case errors.Is(err, ErrStaleFence):
		s.stale.Inc()
	case err == nil:
		s.completed.Inc()
	}
	return err
}

// Release drops the claim the holder of fence holds, so that the next
// begin runs the work again; ErrStaleFence when fence does not hold it.
func (s *Service) Release(ctx context.Context, scope, k string, fence uint64) error {
	sk, err := key(scope, k)
	if err != nil {
		return err
	}
	_, err = s.fenced(ctx, command.OnceReleaseCommand(sk, fence))
	return err
}

// fenced applies a command of a holder: a refusal of its fence (taken
// over, released, expired, completed already) is ErrStaleFence.
func (s *Service) fenced(ctx context.Context, c *command.Command) (*command.Result, error) {
	return fence.Apply(ctx, c, s.store.Once, ErrStaleFence, claimRefusal)
}

// claimRefusal says why the state machine refused a claim holder's fence:
// the claim is gone, its lease ran out, another fence holds it, or it is
// completed.
func claimRefusal(c *command.Command, res *command.Result) (string, bool) {
	switch {
	case res.Code == command.CodeWrongState:
		return "the claim is completed", true
	case res.Code != command.CodeFenceMismatch:
		return "", false
	case res.Fence == 0:
		return "there is no claim (released, or past its retention)", true
	case res.Fence == c.Fence:
		return "its lease ran out", true
	}
	return fmt.Sprintf("fence %d holds it now", res.Fence), true
}

// Get reads the claim of (scope, k), linearizable; command.ErrNotFound when
// there is none.
func (s *Service) Get(ctx context.Context, scope, k string) (*command.Claim, error) {
	sk, err := key(scope, k)
	if err != nil {
		return nil, err
	}
	return s.store.Claim(ctx, sk, false)
}
