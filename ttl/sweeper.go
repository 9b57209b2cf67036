package ttl

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// Proposer is what the sweeper needs from the replicated store. It is
// declared here, by its user, so that ttl never imports the raft wiring.
type Proposer interface {
	// VerifyLeader returns nil only when this node is the leader and a
	// quorum has just confirmed it.
	VerifyLeader(ctx context.Context) error
	// Due lists up to limit entries that have expired at now, from this
	// node's applied state.
	Due(now time.Time, limit int) ([]Entry, error)
	// Expire proposes the removal of entries; the state machine removes
	// each one only if it is still due and still points at the same expiry.
	Expire(ctx context.Context, entries []Entry) error
	// CountDue counts the entries due at now, up to limit.
	CountDue(now time.Time, limit int) (int, error)
}

// SweeperConfig tunes the sweeper. Expiry itself does not wait for it:
// reads treat an expired entry as gone by the state machine's clock; the
// sweeper removes what expired, reclaiming its space.
//
// A sweep proposes up to MaxBatches expire commands of up to BatchSize
// entries, one after another, each waiting for its application; while a
// backlog remains it sweeps again after Pause, else after Interval. Only one
// expire command is ever in flight, and the leader packs it into a log
// entry with the client commands that arrive meanwhile, so its cost to
// clients is one larger batch now and then, not a queue of its own.
type SweeperConfig struct {
	// Interval between sweeps when the last one found nothing left to do:
	// how long an expired entry may wait for its removal when there is no
	// backlog. Shorter costs a leadership check (a heartbeat round) and an
	// index seek per Interval.
	Interval time.Duration
	// BatchSize bounds the entries one expire command carries. Each entry
	// is two deletes in every replica's transaction: larger batches remove
	// more per commit, and make the client commands committed beside them
	// wait longer. It must fit the store's largest command with the
	// longest keys.
	BatchSize int
	// MaxBatches bounds the commands one sweep proposes before it pauses
	// (so a backlog never starves client writes), counts the backlog and
	// checks its leadership again.
	MaxBatches int
	// Pause is the wait before the next sweep when the last one stopped
	// at MaxBatches with entries still due: a backlog is worked off at the
	// pace the cluster commits (each batch waits for its application), not
	// at MaxBatches × BatchSize per Interval. It leaves the log to client
	// commands alone for a moment between sweeps.
	Pause time.Duration
}

// The bounds Validate enforces: past them a setting is a mistake rather
// than a tuning.
const (
	MinSweepInterval = 10 * time.Millisecond
	MaxSweepInterval = time.Hour
	// MaxSweepBatchSize keeps one expire command of the longest keys
	// (1 KiB each) within the command limit a node has with the default
	// listener limits (a 4 MiB body, and room for headers).
	MaxSweepBatchSize  = 4096
	MaxSweepMaxBatches = 1024
)

// DefaultSweeperConfig returns the settings used by idemgate serve.
func DefaultSweeperConfig() SweeperConfig {
	return SweeperConfig{Interval: time.Second, BatchSize: 256, MaxBatches: 16, Pause: 10 * time.Millisecond}
}

// Validate checks the config and names the field at fault.
func (c SweeperConfig) Validate() error {
	switch {
	case c.Interval < MinSweepInterval || c.Interval > MaxSweepInterval:
		return fmt.Errorf("ttl: sweeper Interval %s: want %s to %s", c.Interval, MinSweepInterval, MaxSweepInterval)
	case c.BatchSize < 1 || c.BatchSize > MaxSweepBatchSize:
		return fmt.Errorf("ttl: sweeper BatchSize %d: want 1 to %d", c.BatchSize, MaxSweepBatchSize)
	case c.MaxBatches < 1 || c.MaxBatches > MaxSweepMaxBatches:
		return fmt.Errorf("ttl: sweeper MaxBatches %d: want 1 to %d", c.MaxBatches, MaxSweepMaxBatches)
	case c.Pause <= 0 || c.Pause > c.Interval:
		return fmt.Errorf("ttl: sweeper Pause %s: want more than 0 and at most Interval (%s)", c.Pause, c.Interval)
	}
	return nil
}

// backlogLimit bounds the count behind Backlog: a walk of the index's due
// prefix, made at most once per Interval, only while a backlog exists.
const backlogLimit = 1 << 20

// Sweeper proposes expire commands for due index entries while its node is
// the verified leader.
type Sweeper struct {
	p      Proposer
	cfg    SweeperConfig
	now    func() time.Time
	logger *slog.Logger

	backlog   atomic.Int64 // due entries left after the last sweep (up to backlogLimit)
	countedAt time.Time
	draining  bool                                       // the last two counts of the backlog went down
	rest      func(ctx context.Context, d time.Duration) // waits d or until ctx ends; a test's records
}

// NewSweeper returns a sweeper over p. now is the clock it asks for "due";
// nil means time.Now.
func NewSweeper(p Proposer, cfg SweeperConfig, now func() time.Time, logger *slog.Logger) *Sweeper {
	if now == nil {
		now = time.Now
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 256
	}
	if cfg.MaxBatches <= 0 {
		cfg.MaxBatches = 1
	}
	if cfg.Pause <= 0 || cfg.Pause > cfg.Interval {
		cfg.Pause = cfg.Interval
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Sweeper{p: p, cfg: cfg, now: now, logger: logger, rest: sleep}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Backlog is how many entries were still due after the last sweep on this
// node (0 on a follower, which does not sweep), counted up to 2^20.
func (s *Sweeper) Backlog() int64 { return s.backlog.Load() }

// Run sweeps until ctx is done: at once, then every Interval, or after
// Pause while a backlog remains.
func (s *Sweeper) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := s.SweepOnce(ctx)
		if err != nil && ctx.Err() == nil {
			s.logger.Debug("sweep", "error", err)
		}
		t.Reset(s.nextWait(n, err))
	}
}

// nextWait is the wait after a sweep that proposed n entries: Pause when
// it stopped at its bound with entries still due, else Interval.
func (s *Sweeper) nextWait(n int, err error) time.Duration {
	if err != nil || n < s.cfg.MaxBatches*s.cfg.BatchSize {
		return s.cfg.Interval // nothing left, or a failure: try again later
	}
	return s.cfg.Pause
}

// SweepOnce runs one sweep and returns how many entries it proposed to expire.
// It does nothing unless this node is the verified leader.
func (s *Sweeper) SweepOnce(ctx context.Context) (int, error) {
	if err := s.p.VerifyLeader(ctx); err != nil {
		s.backlog.Store(0)
		return 0, nil // not the leader: the leader sweeps
	}
	total := 0
	for i := 0; i < s.cfg.MaxBatches; i++ {
		due, err := s.p.Due(s.now(), s.cfg.BatchSize)
		if err != nil {
			return total, err
		}
		if len(due) == 0 {
			s.backlog.Store(0)
			return total, nil
		}
		start := s.now()
		if err := s.p.Expire(ctx, due); err != nil {
			return total, err
		}
		total += len(due)
		if s.draining && len(due) == s.cfg.BatchSize {
			// A backlog that shrinks is a burst that came due at once
			// (a million keys written an hour ago), not clients adding
			// due entries faster than they are removed: rest as long as
			// the command took. Each command otherwise rides in about
			// every other log entry; resting, in every third, so the
			// client writes committed meanwhile keep two thirds of the
			// log entries instead of half, and the burst drains a third
			// slower (a million keys at full speed raised the write p99
			// 2.2 times). While the backlog holds or grows, no rest: the
			// sweeper keeps up as fast as the cluster commits.
			s.rest(ctx, s.now().Sub(start))
		}
		if len(due) < s.cfg.BatchSize {
			s.backlog.Store(0)
			return total, nil
		}
	}
	// Stopped at the bound: count what is left, at most once an Interval.
	if now := s.now(); now.Sub(s.countedAt) >= s.cfg.Interval {
		s.countedAt = now
		if n, err := s.p.CountDue(now, backlogLimit); err == nil {
			s.draining = int64(n) < s.backlog.Load()
			s.backlog.Store(int64(n))
		}
	}
	return total, nil
}
