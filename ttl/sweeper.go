package ttl

import (
	"context"
	"log/slog"
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
}

// SweeperConfig tunes the sweeper.
type SweeperConfig struct {
	// Interval between sweeps when the last one found nothing to do.
	Interval time.Duration
	// BatchSize bounds the entries one expire command carries.
	BatchSize int
	// MaxBatches bounds the commands one sweep proposes before it sleeps
	// again, so a backlog never starves client writes.
	MaxBatches int
}

// DefaultSweeperConfig returns the settings used by idemgate serve.
func DefaultSweeperConfig() SweeperConfig {
	return SweeperConfig{Interval: time.Second, BatchSize: 256, MaxBatches: 16}
}

// Sweeper proposes expire commands for due index entries while its node is
// the verified leader.
type Sweeper struct {
	p      Proposer
	cfg    SweeperConfig
	now    func() time.Time
	logger *slog.Logger
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
	if logger == nil {
		logger = slog.Default()
	}
	return &Sweeper{p: p, cfg: cfg, now: now, logger: logger}
}

// Run sweeps until ctx is done.
func (s *Sweeper) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.SweepOnce(ctx); err != nil && ctx.Err() == nil {
			s.logger.Debug("sweep", "error", err)
		}
	}
}

// SweepOnce runs one sweep and returns how many entries it proposed to expire.
// It does nothing unless this node is the verified leader.
func (s *Sweeper) SweepOnce(ctx context.Context) (int, error) {
	if err := s.p.VerifyLeader(ctx); err != nil {
		return 0, nil // not the leader: the leader sweeps
	}
	total := 0
	for i := 0; i < s.cfg.MaxBatches; i++ {
		due, err := s.p.Due(s.now(), s.cfg.BatchSize)
		if err != nil {
			return total, err
		}
		if len(due) == 0 {
			return total, nil
		}
		if err := s.p.Expire(ctx, due); err != nil {
			return total, err
		}
		total += len(due)
		if len(due) < s.cfg.BatchSize {
			return total, nil
		}
	}
	return total, nil
}
