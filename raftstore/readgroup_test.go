package raftstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/storeapi"
)

// TestReadGroupShares: concurrent readers share barrier rounds, and each
// returns only after a round that began after it called has finished.
func TestReadGroupShares(t *testing.T) {
	var begun, finished atomic.Int64
	g := &readGroup{timeout: time.Second, barrier: func(context.Context) error {
		begun.Add(1)
		time.Sleep(2 * time.Millisecond)
		finished.Add(1)
		return nil
	}}
	var wg sync.WaitGroup
	var early atomic.Int64
	for c := 0; c < 64; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				before := begun.Load()
				if err := g.wait(context.Background()); err != nil {
					t.Error(err)
					return
				}
				if finished.Load() < before+1 {
					early.Add(1) // answered by a round that began before the call
				}
			}
		}()
	}
	wg.Wait()
	if early.Load() != 0 {
		t.Fatalf("%d reads were answered by a barrier that began before them", early.Load())
	}
	if n := begun.Load(); n >= 64*20/4 {
		t.Fatalf("%d barrier rounds for %d reads: they were not shared", n, 64*20)
	}
	t.Logf("%d reads, %d barrier rounds", 64*20, begun.Load())
}

// TestReadGroupErrorsAndDeadlines: a failed round fails its readers; a
// reader whose context ends gives up without failing the others.
func TestReadGroupErrorsAndDeadlines(t *testing.T) {
	fail := errors.New("no leader")
	release := make(chan struct{})
	g := &readGroup{timeout: time.Second, barrier: func(context.Context) error {
		<-release
		return fail
	}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.wait(ctx); !errors.Is(err, storeapi.ErrTimeout) {
		t.Fatalf("a reader whose context ended = %v, want ErrTimeout", err)
	}
	done := make(chan error, 1)
	go func() { done <- g.wait(context.Background()) }()
	close(release)
	if err := <-done; !errors.Is(err, fail) {
		t.Fatalf("a reader of a failed round = %v, want its error", err)
	}
}
