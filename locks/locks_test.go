package locks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
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
	if _, err := s.Get(ctx, "hot"); !errors.Is(err, command.ErrNotFound) {
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

// laggingStore is a node whose own apply never tells its waiters of their
// grants (a follower that has not yet learned the commit), with the
// leader's feed of the grants it applied (LeaderGrants) beside it.
type laggingStore struct {
	*memstore.Store
	feed chan []command.LockGrant
}

func newLaggingStore(t *testing.T) *laggingStore {
	l := &laggingStore{Store: memstore.New(t), feed: make(chan []command.LockGrant, 64)}
	l.Store.OnLockGrants(func(grants []command.LockGrant) {
		own := make([]command.LockGrant, len(grants))
		for i, g := range grants {
			own[i] = command.LockGrant{Name: append([]byte(nil), g.Name...), Owner: append([]byte(nil), g.Owner...), Fence: g.Fence, LeaseEnd: g.LeaseEnd}
		}
		l.feed <- own
	})
	return l
}

// OnLockGrants drops the Service's observer: this node's apply tells
// nobody.
func (l *laggingStore) OnLockGrants(func([]command.LockGrant)) {}

func (l *laggingStore) LeaderLockGrants(ctx context.Context, cursor [16]byte) ([]command.LockGrant, [16]byte, error) {
	select {
	case g := <-l.feed:
		cursor[15]++
		return g, cursor, nil
	case <-time.After(100 * time.Millisecond):
		return nil, cursor, nil
	case <-ctx.Done():
		return nil, cursor, ctx.Err()
	}
}

// TestGrantFromLeaderFeed: a waiter whose node has not applied its grant
// yet is granted from the leader's feed, with the grant's fence, and the
// watch of the feed ends once nobody waits.
func TestGrantFromLeaderFeed(t *testing.T) {
	l := newLaggingStore(t)
	s, err := New(l, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := s.Acquire(ctx, "hot", time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		held Held
		err  error
	}
	got := make(chan outcome, 1)
	go func() {
		h, err := s.Acquire(ctx, "hot", time.Hour, 5*time.Second)
		got <- outcome{h, err}
	}()
	for i := 0; waiters(t, l.Store) < 1; i++ {
		if i > 2000 {
			t.Fatal("the waiter never queued")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.Release(ctx, "hot", first.Fence); err != nil {
		t.Fatal(err)
	}
	o := <-got
	if o.err != nil {
		t.Fatalf("the waiter: %v (its node's apply tells nobody: only the leader's feed could)", o.err)
	}
	st, err := s.Get(ctx, "hot")
	if err != nil || o.held.Fence <= first.Fence || st.Fence != o.held.Fence || o.held.ExpiresAt.UnixNano() != st.LeaseEnd {
		t.Fatalf("granted %+v after fence %d; the lock %+v %v", o.held, first.Fence, st, err)
	}
	for i := 0; ; i++ {
		s.mu.Lock()
		watching := s.watching
		s.mu.Unlock()
		if !watching {
			break
		}
		if i > 2000 {
			t.Fatal("the watch of the feed runs on with nobody waiting")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
