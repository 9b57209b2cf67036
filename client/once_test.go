package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/client"
)

func onceClient(t *testing.T, lease time.Duration, rt http.RoundTripper) *client.Client {
	t.Helper()
	cfg := client.Config{APIs: apis, OnceLease: lease, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
	if rt != nil {
		cfg.HTTPClient = &http.Client{Transport: rt, Timeout: 10 * time.Second}
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOnceRunsOnce: eight callers of one key at once, their function
// running past its lease: it runs once (the lease renewed meanwhile, nobody
// takes over) and every caller gets its result.
func TestOnceRunsOnce(t *testing.T) {
	c := onceClient(t, time.Second, nil)
	var runs atomic.Int32
	var wg sync.WaitGroup
	results := make([]string, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Once(context.Background(), "sms", "runs-once", []byte("hello"), func(ctx context.Context) ([]byte, error) {
				runs.Add(1)
				select {
				case <-time.After(2500 * time.Millisecond): // more than two leases: renewed
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return []byte(fmt.Sprintf("sent by %d", i)), nil
			})
			if err != nil {
				t.Errorf("caller %d: %v", i, err)
			}
			results[i] = string(r)
		}()
	}
	wg.Wait()
	if n := runs.Load(); n != 1 {
		t.Fatalf("the function ran %d times", n)
	}
	for i, r := range results {
		if r != results[0] || !strings.HasPrefix(r, "sent by ") {
			t.Fatalf("caller %d got %q, caller 0 %q", i, r, results[0])
		}
	}
}

// renewBlocker loses every renew while blocked: a holder paused (or cut
// off) past its lease.
type renewBlocker struct{ blocked atomic.Bool }

func (b *renewBlocker) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.blocked.Load() && strings.Contains(r.URL.Path, "/renew") {
		return nil, errors.New("renew lost")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestOnceTakeover: a holder whose renews are lost past its lease is taken
// over; its late result is refused (ErrStaleFence) and the new holder's is
// what every later caller gets. A function that fails releases the claim,
// and the next caller runs it; another payload is ErrKeyReuse.
func TestOnceTakeover(t *testing.T) {
	blocker := &renewBlocker{}
	blocker.blocked.Store(true)
	paused := onceClient(t, 300*time.Millisecond, blocker)
	other := onceClient(t, 300*time.Millisecond, nil)
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	pausedErr := make(chan error, 1)
	go func() {
		_, err := paused.Once(ctx, "payments", "order-9", []byte("charge 9"), func(ctx context.Context) ([]byte, error) {
			close(started)
			<-release
			return []byte("charged by the paused holder"), nil
		})
		pausedErr <- err
	}()
	<-started
	r, err := other.Once(ctx, "payments", "order-9", []byte("charge 9"), func(context.Context) ([]byte, error) {
		return []byte("charged by the other"), nil
	})
	if err != nil || string(r) != "charged by the other" {
		t.Fatalf("the caller after the lease ran out: %q %v", r, err)
	}
	close(release)
	if err := <-pausedErr; !errors.Is(err, client.ErrStaleFence) {
		t.Fatalf("the paused holder's complete: %v, want ErrStaleFence", err)
	}
	r, err = other.Once(ctx, "payments", "order-9", []byte("charge 9"), func(context.Context) ([]byte, error) {
		t.Error("ran again after a complete")
		return nil, nil
	})
	if err != nil || string(r) != "charged by the other" {
		t.Fatalf("a later caller: %q %v", r, err)
	}
	if _, err := other.Once(ctx, "payments", "order-9", []byte("charge 10"), func(context.Context) ([]byte, error) {
		t.Error("ran for another payload")
		return nil, nil
	}); !errors.Is(err, client.ErrKeyReuse) {
		t.Fatalf("another payload: %v, want ErrKeyReuse", err)
	}

	boom := errors.New("smtp down")
	if _, err := other.Once(ctx, "mail", "welcome-1", nil, func(context.Context) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("a failing function: %v", err)
	}
	r, err = other.Once(ctx, "mail", "welcome-1", nil, func(context.Context) ([]byte, error) { return []byte("sent"), nil })
	if err != nil || string(r) != "sent" {
		t.Fatalf("after a release: %q %v", r, err)
	}
}
