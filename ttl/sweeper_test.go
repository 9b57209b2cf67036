package ttl

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// listProposer is a leader whose due entries are a list: Expire removes
// them, as the state machine would.
type listProposer struct {
	mu       sync.Mutex
	due      []Entry
	expires  int
	onExpire func() // called as each expire command applies, if set
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
	if p.onExpire != nil {
		p.onExpire()
	}
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

// TestSweeperPacesADrainingBacklog: while the backlog shrinks from one
// count to the next (a burst that came due at once), the sweeper rests
// after each full expire command as long as the command took; while it
// holds or grows (clients add due entries faster than a sweep removes
// them), never: it does not fall behind for being gentle.
func TestSweeperPacesADrainingBacklog(t *testing.T) {
	clock := time.Unix(1000, 0)
	cfg := SweeperConfig{Interval: time.Second, BatchSize: 10, MaxBatches: 3, Pause: time.Millisecond}
	p := &listProposer{due: make([]Entry, 1000), onExpire: func() { clock = clock.Add(5 * time.Millisecond) }}
	s := NewSweeper(p, cfg, func() time.Time { return clock }, nil)
	var rests []time.Duration
	s.rest = func(_ context.Context, d time.Duration) { rests = append(rests, d) }
	sweep := func() {
		t.Helper()
		rests = nil
		if n, err := s.SweepOnce(context.Background()); n != 30 || err != nil {
			t.Fatalf("sweep: %d expired (%v), want 30", n, err)
		}
		clock = clock.Add(time.Second) // the next sweep counts again
	}
	five := []time.Duration{5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond}
	sweep() // counts 970: the backlog grew (from none)
	sweep() // counts 940: it shrinks
	if len(rests) != 0 || s.Backlog() != 940 {
		t.Fatalf("first sweeps of a burst: rests %v, backlog %d; want none and 940", rests, s.Backlog())
	}
	sweep()
	if !slices.Equal(rests, five) || s.Backlog() != 910 {
		t.Fatalf("the burst drains: rests %v, backlog %d; want %v (as long as each command took) and 910", rests, s.Backlog(), five)
	}
	p.mu.Lock()
	p.due = append(p.due, make([]Entry, 1000)...) // clients outpace it
	p.mu.Unlock()
	sweep() // counts 1880: it grew
	sweep()
	if len(rests) != 0 || s.Backlog() != 1850 {
		t.Fatalf("after the backlog grew: rests %v, backlog %d; want none and 1850", rests, s.Backlog())
	}
	sweep()
	if !slices.Equal(rests, five) {
		t.Fatalf("draining again: rests %v, want %v", rests, five)
	}
	if w := s.nextWait(30, nil); w != cfg.Pause {
		t.Fatalf("a sweep that stopped at its bound: wait %v, want %v", w, cfg.Pause)
	}
	if w := s.nextWait(7, nil); w != cfg.Interval {
		t.Fatalf("a sweep that emptied the backlog: wait %v, want %v", w, cfg.Interval)
	}
}
