package script

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// budget is the context the VM checks before every instruction: Done is
// closed once the run is past its time or its heap growth, or ctx is done.
// Checking one atomic per instruction costs next to nothing; reading the
// clock and the heap does not, so a watchdog beside the script does it,
// every millisecond. Most scripts are done in far less (a lock's: a few
// dozen instructions), so the watchdog starts only once the run has
// taken a millisecond, as Done sees every 64 instructions.
type budget struct {
	context.Context
	open, closed chan struct{}
	why          atomic.Pointer[error]
	quit         chan struct{}
	cfg          Config
	start        time.Time
	n            uint32
	watching     bool
	// base is the heap the run's growth is measured from: the heap when
	// the watchdog started, lowered when the heap falls below it (garbage
	// of earlier runs, swept while this one runs, would otherwise hide
	// what this one makes) to the heap less what the run was charged for
	// since the last lowering (charged, made, and as far as anyone knows
	// still held).
	mu      sync.Mutex
	base    int64
	charged int64
}

// heapMetric is the bytes of live and not yet swept heap objects.
const heapMetric = "/memory/classes/heap/objects:bytes"

func newBudget(ctx context.Context, cfg Config) *budget {
	b := &budget{Context: ctx, open: make(chan struct{}), closed: make(chan struct{}), quit: make(chan struct{}),
		cfg: cfg, start: time.Now()}
	close(b.closed)
	return b
}

// watch starts the watchdog.
func (b *budget) watch() {
	b.watching = true
	sample := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(sample)
	b.base = int64(sample[0].Value.Uint64())
	deadline := b.start.Add(b.cfg.Timeout)
	go func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-b.quit:
				return
			case <-b.Context.Done():
				err := b.Context.Err()
				b.why.CompareAndSwap(nil, &err)
				return
			case now := <-t.C:
				metrics.Read(sample)
				var err error
				switch {
				case now.After(deadline):
					err = ErrTimeout
				case b.growth(sample[0].Value.Uint64()) > b.cfg.MaxMemory:
					err = ErrMemory
				default:
					continue
				}
				b.why.CompareAndSwap(nil, &err)
				return
			}
		}
	}()
}

// chargeFloor: a value smaller than this is left to the watchdog, which
// samples the heap every millisecond.
const chargeFloor = 1 << 20

// grown is how far the heap has grown since the watchdog started (which
// this starts, if it has not).
func (b *budget) grown() int64 {
	if !b.watching {
		b.watch()
	}
	sample := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(sample)
	return b.growth(sample[0].Value.Uint64())
}

// growth is the heap's growth since base, for a heap of heap bytes.
func (b *budget) growth(heap uint64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if h := int64(heap); h < b.base {
		b.base, b.charged = h-min(b.charged, h), 0
	}
	return int64(heap) - b.base
}

// charge is told of n bytes the run is about to make at once, in one
// builtin or one instruction: faster than the watchdog samples. Once the
// heap's growth and n pass the limit the run is stopped (ErrMemory,
// before its next instruction) and charge answers the error: the caller
// then makes nothing, raising a Lua error instead. Garbage not yet
// collected counts too: a script that makes many large values and drops
// them may be stopped although it never held them all.
func (b *budget) charge(n int64) error {
	if n < chargeFloor {
		return nil
	}
	if b.grown()+n > b.cfg.MaxMemory {
		err := ErrMemory
		b.why.CompareAndSwap(nil, &err)
		return err
	}
	b.mu.Lock()
	b.charged += n
	b.mu.Unlock()
	return nil
}

// room is what the run may still make: the limit less the heap's growth
// (a run too short for the watchdog to have started made next to
// nothing, or a builtin would have started it).
func (b *budget) room() int64 {
	if !b.watching {
		return b.cfg.MaxMemory
	}
	return b.cfg.MaxMemory - b.grown()
}

func (b *budget) Done() <-chan struct{} {
	if b.n++; b.n&63 == 0 && !b.watching {
		if err := b.Context.Err(); err != nil {
			b.why.CompareAndSwap(nil, &err)
		} else if time.Since(b.start) > time.Millisecond {
			b.watch()
		}
	}
	if b.why.Load() != nil {
		return b.closed
	}
	return b.open
}

func (b *budget) Err() error {
	if p := b.why.Load(); p != nil {
		return *p
	}
	return nil
}

func (b *budget) reason() error { return b.Err() }

func (b *budget) stop() { close(b.quit) }

func (b *budget) limit(err error) string {
	switch {
	case errors.Is(err, ErrTimeout):
		return fmt.Sprintf("limit %s", b.cfg.Timeout)
	case errors.Is(err, ErrMemory):
		return fmt.Sprintf("limit %d MiB", b.cfg.MaxMemory>>20)
	}
	return "the request was cancelled"
}
