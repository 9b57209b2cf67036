package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Lock errors.
var (
	// ErrLocked: another held the lock until ctx ended (409 locked).
	ErrLocked = errors.New("client: the lock is held by another")
	// ErrLockLost: the lock was lost while held: its lease ran out before
	// a renew reached the cluster (and the next waiter may hold it now).
	ErrLockLost = errors.New("client: the lock was lost")
)

func init() { problemErrors["locked"] = ErrLocked }

// maxLockWait bounds one acquire's wait in the queue: below the server's
// bound (5 minutes) and the HTTP client's timeout; a longer wait asks again.
const maxLockWait = 20 * time.Second

// Lock is a lock the caller holds, renewed in the background at a third
// of its lease until Unlock or its loss. Pass Fence to what the lock
// protects: it is strictly higher than every earlier holder's, so a store
// that remembers the highest fence it saw refuses a paused holder's late
// write.
type Lock struct {
	Name  string
	Fence uint64

	c      *Client
	path   string
	ttl    time.Duration
	done   chan struct{} // closed when the lock is no longer held
	stop   chan struct{} // closed by Unlock
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
	closed sync.Once
}

type lockHeld struct {
	Fence     uint64 `json:"fence"`
	ExpiresAt string `json:"expires_at"`
}

// Lock acquires the lock name with a lease of ttl (POST
// /v1/locks/{name}), waiting in its FIFO queue, behind the holder and
// every earlier waiter, until it is granted or ctx ends (ErrLocked). The
// lease is renewed while the lock is held; Done is closed if it is lost.
// Call Unlock when done.
func (c *Client) Lock(ctx context.Context, name string, ttl time.Duration) (*Lock, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("client: lock ttl %s: want a positive duration", ttl)
	}
	path := "/v1/locks/" + url.PathEscape(name)
	limit := maxLockWait
	if t := c.cfg.HTTPClient.Timeout; t > 0 && t/2 < limit {
		limit = t / 2
	}
	for attempt := 1; ; attempt++ {
		wait := limit
		if d, ok := ctx.Deadline(); ok {
			// The server answers a little before ctx ends, so the answer
			// (409 locked) is read rather than cut.
			left := time.Until(d)
			wait = min(wait, left-min(left/10, 250*time.Millisecond))
		}
		q := "?ttl=" + ttl.String()
		if wait = wait.Truncate(time.Millisecond); wait > 0 {
			q += "&wait=" + wait.String()
		}
		// safe: an acquire whose answer was lost left the queue, or gave
		// its grant back, when its connection closed.
		a, err := c.api(ctx, safe, http.MethodPost, path+q, nil, nil)
		if err != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("%w until ctx ended: %w", ErrLocked, err)
		}
		if err != nil {
			return nil, err
		}
		switch a.status {
		case http.StatusCreated:
			var h lockHeld
			if err := json.Unmarshal(a.body, &h); err != nil || h.Fence == 0 {
				return nil, fmt.Errorf("client: lock answer %q: %v", a.body, err)
			}
			l := &Lock{Name: name, Fence: h.Fence, c: c, path: path, ttl: ttl,
				done: make(chan struct{}), stop: make(chan struct{})}
			l.wg.Add(1)
			go l.renew()
			return l, nil
		case http.StatusConflict:
			if ctx.Err() != nil || wait <= 0 {
				return nil, a.errorOf("", attempt)
			}
			if e := a.errorOf("", attempt); !errors.Is(e, ErrLocked) {
				return nil, e
			}
		default:
			return nil, a.errorOf("", attempt)
		}
	}
}

// renew renews the lease at a third of it until Unlock, or until a renew
// is refused (the lock was lost).
func (l *Lock) renew() {
	defer l.wg.Done()
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	body, _ := json.Marshal(map[string]uint64{"fence": l.Fence})
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl)
		a, err := l.c.api(ctx, safe, http.MethodPost, l.path+"/renew?ttl="+l.ttl.String(), jsonHeader.Clone(), body)
		cancel()
		if err == nil && a.status == http.StatusConflict {
			l.end(fmt.Errorf("%w: %w", ErrLockLost, a.errorOf("", 1)))
			return
		}
		// Not answered (a leader election): the next tick tries again
		// while the lease lasts.
	}
}

func (l *Lock) end(err error) {
	l.closed.Do(func() {
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
		close(l.done)
	})
}

// Done is closed when the lock is no longer held: released, or lost.
func (l *Lock) Done() <-chan struct{} { return l.done }

// Err is nil while the lock is held, ErrLockLost once it was lost, and
// ErrLockReleased after Unlock.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// ErrLockReleased is Lock.Err after Unlock.
var ErrLockReleased = errors.New("client: the lock was released")

// Unlock stops renewing and releases the lock by its fence (DELETE
// /v1/locks/{name}?fence=N), so the next waiter is granted it at once;
// ErrLockLost when it was lost before.
func (l *Lock) Unlock(ctx context.Context) error {
	select {
	case <-l.stop:
		return ErrLockReleased
	default:
		close(l.stop)
	}
	l.wg.Wait()
	if err := l.Err(); err != nil {
		return err
	}
	l.end(ErrLockReleased)
	a, err := l.c.api(ctx, safe, http.MethodDelete, l.path+"?fence="+strconv.FormatUint(l.Fence, 10), nil, nil)
	if err != nil {
		return err
	}
	if a.status == http.StatusConflict {
		return fmt.Errorf("%w: %w", ErrLockLost, a.errorOf("", 1))
	}
	if a.status != http.StatusOK {
		return a.errorOf("", 1)
	}
	return nil
}
