// Package locks runs fair locks with fencing for the faces (the HTTP API,
// the Redis protocol): acquire with a lease and an optional wait, renew,
// release by fence. The state machine holds each lock and its FIFO queue
// (command.Lock) and grants a freed lock to the queue's head in the apply that
// freed it; this package keeps, per node, the requests that wait here, and
// wakes each from this node's own apply of its grant (Store.OnLockGrants):
// nobody polls. A request that gives up leaves the queue by a log entry.
package locks

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/fence"
	"github.com/idemgate/idemgate/storeapi"
)

// Errors of lock operations.
var (
	// ErrLocked: another holds the lock, and the wait (if any) ran out.
	ErrLocked = errors.New("the lock is held by another")
	// ErrStaleFence: the fence no longer holds the lock (released, its
	// lease ran out, or it never did).
	ErrStaleFence = errors.New("the fence no longer holds the lock")
	// ErrQueueFull: too many requests wait for the lock already
	// (command.MaxLockWaiters in the cluster, Config.MaxWaiters on this node).
	ErrQueueFull = command.ErrQueueFull
	// ErrBadName: a name command.CheckLockName refuses.
	ErrBadName = errors.New("a lock name is 1-256 bytes of letters, digits and . _ : @ -")
	// ErrBadTTL: a ttl that is not positive or over MaxTTL.
	ErrBadTTL = fmt.Errorf("ttl must be positive and at most %s", MaxTTL)
	// ErrBadWait: a wait that is negative or over MaxWait.
	ErrBadWait = fmt.Errorf("wait must be 0 to %s", MaxWait)
)

// MaxTTL bounds a lock's lease: a holder renews a longer hold.
const MaxTTL = 24 * time.Hour

// MaxWait bounds how long one acquire waits in the queue: a caller that
// will wait longer asks again.
const MaxWait = 5 * time.Minute

// leaveTimeout bounds the log entry of a waiter that gives up: past it
// the waiter's entry goes by its own give-up time.
const leaveTimeout = 5 * time.Second

// Store is what locks needs from the replicated store.
type Store interface {
	// Lock applies a lock command; refusals are in the result's Code.
	Lock(ctx context.Context, c *command.Command) (*command.Result, error)
	// LockState reads a lock (command.ErrNotFound when free), linearizable
	// unless local.
	LockState(ctx context.Context, name []byte, local bool) (*command.Lock, error)
	// OnLockGrants registers the function told the grants of each batch
	// this node applies.
	OnLockGrants(fn func(grants []command.LockGrant))
}

// LeaderGrants is what a store that replicates offers besides Store: the
// grants the leader applies, told before this node applies them (a
// follower learns of a commit only with the leader's next AppendEntries).
// A Service whose store has it watches the feed while requests wait here.
type LeaderGrants interface {
	// LeaderLockGrants returns the grants applied after cursor (zero: the
	// newest held), waiting a while for some, and the next cursor.
	LeaderLockGrants(ctx context.Context, cursor [16]byte) ([]command.LockGrant, [16]byte, error)
}

// watchTimeout bounds one call to the leader's feed (which holds a call
// for a second at most); watchRetry is the pause after a failed one
// (no leader, an election): the node's own apply still tells meanwhile.
const (
	watchTimeout = 5 * time.Second
	watchRetry   = 100 * time.Millisecond
)

// Config is a Service's settings.
type Config struct {
	// MaxWaiters bounds the acquires that wait on this node at once:
	// each holds a request and a little memory until its grant.
	MaxWaiters int
}

// DefaultConfig returns the settings a node runs with.
func DefaultConfig() Config { return Config{MaxWaiters: 16384} }

// Validate names the field that is out of range.
func (c Config) Validate() error {
	if c.MaxWaiters < 1 || c.MaxWaiters > 1_000_000 {
		return fmt.Errorf("locks: max_waiters: %d, want 1-1000000", c.MaxWaiters)
	}
	return nil
}

// Held is a lock the caller holds.
type Held struct {
	Fence     uint64
	ExpiresAt time.Time
	Waited    time.Duration // how long the acquire waited in the queue
}

// Service runs locks over a store.
type Service struct {
	store Store
	cfg   Config

	mu       sync.Mutex
	waiting  map[[command.LockOwnerLen]byte]chan command.LockGrant
	watching bool // a watch of the leader's grants runs (while requests wait)

	acquired prometheus.Counter
	waited   prometheus.Histogram
	released prometheus.Counter
	stale    prometheus.Counter
	gaveUp   prometheus.Counter
}

// New returns a Service and registers it for the store's grants.
func New(store Store, cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "idemgate_locks_" + name + "_total", Help: help})
	}
	s := &Service{store: store, cfg: cfg, waiting: map[[command.LockOwnerLen]byte]chan command.LockGrant{},
		acquired: c("acquired", "Locks acquired through this node, at once or after a wait."),
		waited: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "idemgate_locks_wait_seconds",
			Help:    "How long acquires through this node waited in a lock's queue before their grant.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
		released: c("released", "Locks released by their holder through this node."),
		stale:    c("stale_releases", "Releases refused because the fence no longer held the lock."),
		gaveUp:   c("gave_up", "Acquires through this node whose wait ran out or whose client went away."),
	}
	store.OnLockGrants(s.granted)
	return s, nil
}

// Register registers the lock metrics (the locks whose lease ran out are
// idemgate_expired_total{kind="lock"}, counted by the state machine).
func (s *Service) Register(reg prometheus.Registerer) error {
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "idemgate_locks_waiting",
		Help: "Acquires waiting on this node for a lock's grant."}, func() float64 { return float64(s.Waiting()) })
	for _, c := range []prometheus.Collector{s.acquired, s.waited, s.released, s.stale, s.gaveUp, waiting} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// granted wakes the requests waiting here for the grants of one batch;
// grants to other nodes' waiters are not found and ignored.
func (s *Service) granted(grants []command.LockGrant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range grants {
		var o [command.LockOwnerLen]byte
		if copy(o[:], g.Owner) != len(o) {
			continue
		}
		if ch, ok := s.waiting[o]; ok {
			select {
			case ch <- g:
			default:
			}
		}
	}
}

// wait registers owner for its grant; ErrQueueFull when MaxWaiters wait
// here already.
func (s *Service) wait(owner [command.LockOwnerLen]byte) (chan command.LockGrant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiting) >= s.cfg.MaxWaiters {
		return nil, fmt.Errorf("%w: %d acquires wait on this node", ErrQueueFull, len(s.waiting))
	}
	ch := make(chan command.LockGrant, 1)
	s.waiting[owner] = ch
	if lg, ok := s.store.(LeaderGrants); ok && !s.watching {
		s.watching = true
		go s.watch(lg)
	}
	return ch, nil
}

// watch tells the waiters here of the grants the leader applies, while
// any wait: a grant reaches a waiter on a follower without waiting for the
// follower's own apply, which comes only with the leader's next log write.
// Duplicates (the same grant from the node's apply) find the request
// answered and are ignored. It ends once nobody waits.
func (s *Service) watch(lg LeaderGrants) {
	var cursor [16]byte
	for {
		s.mu.Lock()
		if len(s.waiting) == 0 {
			s.watching = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), watchTimeout)
		grants, next, err := lg.LeaderLockGrants(ctx, cursor)
		cancel()
		if err != nil {
			cursor = [16]byte{}
			time.Sleep(watchRetry)
			continue
		}
		cursor = next
		if len(grants) > 0 {
			s.granted(grants)
		}
	}
}

func (s *Service) done(owner [command.LockOwnerLen]byte) {
	s.mu.Lock()
	delete(s.waiting, owner)
	s.mu.Unlock()
}

// Waiting is how many acquires wait on this node now.
func (s *Service) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiting)
}

// CheckName checks a lock's name (ErrBadName).
func CheckName(name string) error {
	if command.CheckLockName([]byte(name)) != nil {
		return ErrBadName
	}
	return nil
}

func checkTTL(d time.Duration) error {
	if d <= 0 || d > MaxTTL {
		return fmt.Errorf("%w: %s", ErrBadTTL, d)
	}
	return nil
}

// LockedError is ErrLocked with the holder's lease end (a caller's
// Retry-After).
type LockedError struct{ Until time.Time }

func (e *LockedError) Error() string { return ErrLocked.Error() }

// Unwrap makes errors.Is(err, ErrLocked) hold.
func (e *LockedError) Unwrap() error { return ErrLocked }

// Acquire takes the lock name with a lease of ttl, waiting up to wait
// (0: not at all) in its FIFO queue; ErrLocked (a *LockedError) when
// another holds it after that. The lease starts at the grant.
func (s *Service) Acquire(ctx context.Context, name string, ttl, wait time.Duration) (Held, error) {
	if err := CheckName(name); err != nil {
		return Held{}, err
	}
	if err := checkTTL(ttl); err != nil {
		return Held{}, err
	}
	if wait < 0 || wait > MaxWait {
		return Held{}, fmt.Errorf("%w: %s", ErrBadWait, wait)
	}
	var owner [command.LockOwnerLen]byte
	if _, err := rand.Read(owner[:]); err != nil {
		return Held{}, err
	}
	var ch chan command.LockGrant
	if wait > 0 {
		var err error
		if ch, err = s.wait(owner); err != nil {
			return Held{}, err
		}
		defer s.done(owner)
	}
	start := time.Now()
	deadline := start.Add(wait)
	c := command.LockAcquireCommand([]byte(name), owner[:], ttl, wait)
	// One request id for every try: a retry after a lost answer (a leader
	// change) is answered with the first try's result, its ticket.
	c.ReqID = storeapi.NewRequestID()
	res, err := s.propose(ctx, c, deadline)
	if err != nil {
		if wait > 0 {
			_ = s.leave(name, owner, 0) // best effort: err says the outcome is unknown
		}
		return Held{}, err
	}
	switch res.Code {
	case command.CodeCreated:
		s.acquired.Inc()
		return Held{Fence: res.Fence, ExpiresAt: time.Unix(0, res.ExpiresAt)}, nil
	case command.CodeExists:
		return Held{}, &LockedError{Until: time.Unix(0, res.ExpiresAt)}
	case command.CodeQueued:
	default:
		return Held{}, res.Err()
	}
	ticket := res.Version
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case g := <-ch:
		return s.won(g, start), nil
	case <-t.C:
		select {
		case g := <-ch: // the grant and the end of the wait crossed: it is ours
			return s.won(g, start), nil
		default:
		}
	case <-ctx.Done():
	}
	s.gaveUp.Inc()
	if err := s.leave(name, owner, ticket); err != nil {
		// Not out of the queue for sure: it may still be granted, to
		// nobody, until its wait or lease runs out. The caller must not
		// take this for "held by another".
		return Held{}, fmt.Errorf("giving up the wait: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return Held{}, err
	}
	st, err := s.store.LockState(context.Background(), []byte(name), true)
	if err != nil {
		return Held{}, &LockedError{}
	}
	return Held{}, &LockedError{Until: time.Unix(0, st.LeaseEnd)}
}

func (s *Service) won(g command.LockGrant, start time.Time) Held {
	waited := time.Since(start)
	s.acquired.Inc()
	s.waited.Observe(waited.Seconds())
	return Held{Fence: g.Fence, ExpiresAt: time.Unix(0, g.LeaseEnd), Waited: waited}
}

// propose applies an acquire, trying it again under its request id while
// the store fails to run it (no leader yet) until deadline.
func (s *Service) propose(ctx context.Context, c *command.Command, deadline time.Time) (*command.Result, error) {
	for {
		res, err := s.store.Lock(ctx, c)
		if err == nil || ctx.Err() != nil || !retryable(err) || time.Now().After(deadline) {
			return res, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// retryable: the store could not run the command now, and may soon (an
// election).
func retryable(err error) bool {
	return errors.Is(err, storeapi.ErrNoLeader) || errors.Is(err, storeapi.ErrNotLeader) ||
		errors.Is(err, storeapi.ErrTimeout)
}

// leave takes a waiter that gave up out of the queue, or gives its grant
// back, by a log entry of its own: a waiter must never block the lock. It
// runs on a context of its own (the caller's may be what ended).
func (s *Service) leave(name string, owner [command.LockOwnerLen]byte, ticket uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	c := command.LockLeaveCommand([]byte(name), owner[:], ticket)
	c.ReqID = storeapi.NewRequestID()
	_, err := s.propose(ctx, c, time.Now().Add(leaveTimeout))
	return err
}

// Renew extends the lease of the holder of fence to ttl from now and
// returns its new end; ErrStaleFence once the lock was lost.
func (s *Service) Renew(ctx context.Context, name string, fence uint64, ttl time.Duration) (time.Time, error) {
	if err := CheckName(name); err != nil {
		return time.Time{}, err
	}
	if err := checkTTL(ttl); err != nil {
		return time.Time{}, err
	}
	res, err := s.fenced(ctx, command.LockRenewCommand([]byte(name), fence, ttl))
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, res.ExpiresAt), nil
}

// Release frees the lock the holder of fence holds (the next waiter gets
// it in the same apply); ErrStaleFence when fence does not hold it.
func (s *Service) Release(ctx context.Context, name string, fence uint64) error {
	if err := CheckName(name); err != nil {
		return err
	}
	_, err := s.fenced(ctx, command.LockReleaseCommand([]byte(name), fence))
	switch {
	case errors.Is(err, ErrStaleFence):
		s.stale.Inc()
	case err == nil:
		s.released.Inc()
	}
	return err
}

// fenced applies a command of a holder: a refusal of its fence is
// ErrStaleFence, saying why when the state machine knows.
func (s *Service) fenced(ctx context.Context, c *command.Command) (*command.Result, error) {
	return fence.Apply(ctx, c, s.store.Lock, ErrStaleFence, lockRefusal)
}

// lockRefusal: the state machine refuses a fence that does not hold the
// lock, with the lease end of a holder whose lease ran out.
func lockRefusal(_ *command.Command, res *command.Result) (string, bool) {
	switch {
	case res.Code != command.CodeFenceMismatch:
		return "", false
	case res.ExpiresAt != 0:
		return "its lease ran out at " + time.Unix(0, res.ExpiresAt).UTC().Format(time.RFC3339Nano), true
	}
	return "", true
}

// Get reads the lock held under name, linearizable; command.ErrNotFound when
// it is free.
func (s *Service) Get(ctx context.Context, name string) (*command.Lock, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	return s.store.LockState(ctx, []byte(name), false)
}
