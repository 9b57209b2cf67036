package locks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/internal/memstore"
)

// TestWaitersBounded: a node holds at most MaxWaiters waiting acquires;
// one more is refused at once with ErrQueueFull, nothing queued for it,
// and once they leave (their context ends) the node holds none.
func TestWaitersBounded(t *testing.T) {
	m := memstore.New(t)
	s, err := New(m, Config{MaxWaiters: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	held, err := s.Acquire(ctx, "hot", time.Hour, 0)
	if err != nil || held.Fence == 0 {
		t.Fatalf("acquire: %+v %v", held, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() { _, err := s.Acquire(wctx, "hot", time.Hour, time.Minute); errs <- err }()
	}
	for i := 0; s.Waiting() < 3 || waiters(t, m) < 3; i++ {
		if i > 2000 {
			t.Fatalf("%d waiting, %d queued", s.Waiting(), waiters(t, m))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := s.Acquire(ctx, "hot", time.Hour, time.Minute); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("one waiter too many: %v, want ErrQueueFull", err)
	}
	if n := waiters(t, m); n != 3 {
		t.Fatalf("%d queued, want 3", n)
	}
	cancel()
	for i := 0; i < 3; i++ {
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Fatalf("a waiter whose client went away: %v", err)
		}
	}
	if n, w := waiters(t, m), s.Waiting(); n != 0 || w != 0 {
		t.Fatalf("after they left: %d queued, %d waiting", n, w)
	}
	if err := s.Release(ctx, "hot", held.Fence); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "hot"); !errors.Is(err, fsm.ErrNotFound) {
		t.Fatalf("the lock after its release with nobody left: %v", err)
	}
	if err := s.Release(ctx, "hot", held.Fence); !errors.Is(err, ErrStaleFence) {
		t.Fatalf("a second release: %v", err)
	}
	if _, err := New(m, Config{}); err == nil {
		t.Fatal("a Config without MaxWaiters was accepted")
	}
}

func waiters(t *testing.T, m *memstore.Store) int {
	t.Helper()
	l, err := m.LockState(context.Background(), []byte("hot"), true)
	if err != nil {
		t.Fatal(err)
	}
	return int(l.Waiters)
}
