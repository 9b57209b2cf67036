package ttl

import (
	"context"
	"sync"
	"testing"
	"time"
)

// listProposer is a leader whose due entries are a list: Expire removes
// them, as the state machine would.
type listProposer struct {
	mu      sync.Mutex
	due     []Entry
	expires int
}

func (p *listProposer) VerifyLeader(context.Context) error { return nil }

func (p *listProposer) Due(_ time.Time, limit int) ([]Entry, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Entry(nil), p.due[:min(limit, len(p.due))]...), nil
}

func (p *listProposer) Expire(_ context.Context, entries []Entry) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.due = p.due[len(entries):]
	p.expires++
	return nil
}

func (p *listProposer) CountDue(_ time.Time, limit int) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return min(limit, len(p.due)), nil
}

func (p *listProposer) left() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.due)
}

// TestSweeperWorksOffABacklog: a backlog bigger than one sweep's bound is
// worked off sweep after sweep, Pause apart, not one sweep per Interval
// (an hour here: without the pause, only the first sweep would run), and
// Backlog says what is left after each.
func TestSweeperWorksOffABacklog(t *testing.T) {
	cfg := SweeperConfig{Interval: time.Hour, BatchSize: 10, MaxBatches: 3, Pause: time.Millisecond}
	p := &listProposer{due: make([]Entry, 1000)}
	s := NewSweeper(p, cfg, nil, nil)
	if n, err := s.SweepOnce(context.Background()); n != 30 || err != nil || s.Backlog() != 970 {
		t.Fatalf("one sweep: %d expired (%v), backlog %d; want 30 and 970", n, err, s.Backlog())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for p.left() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if p.left() != 0 || s.Backlog() != 0 {
		t.Fatalf("%d entries left, backlog %d: the sweeper stopped between intervals", p.left(), s.Backlog())
	}
	if p.expires != 100 {
		t.Fatalf("%d expire commands for 1000 entries in batches of 10", p.expires)
	}
}
