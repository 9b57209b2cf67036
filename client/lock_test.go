package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/client"
)

// lockWaiters reads how many wait for name (GET /v1/locks/{name}), -1
// when it is free.
func lockWaiters(t *testing.T, name string) int {
	t.Helper()
	resp, err := http.Get(apis[0] + "/v1/locks/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == 404 {
		return -1
	}
	var st struct{ Waiters int }
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Waiters
}

// TestLockHeldAndQueued: a lock held past several leases is renewed (a
// caller that waits less than that gets ErrLocked); waiters queued in a
// known order on three nodes are granted in that order as each unlocks,
// with rising fences; Unlock twice is refused.
func TestLockHeldAndQueued(t *testing.T) {
	c := onceClient(t, 0, nil)
	ctx := context.Background()
	held, err := c.Lock(ctx, "report-job", 600*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 1500*time.Millisecond) // past two leases: renewed meanwhile
	_, err = c.Lock(short, "report-job", time.Second)
	cancel()
	if !errors.Is(err, client.ErrLocked) {
		t.Fatalf("Lock while held: %v, want ErrLocked", err)
	}
	if held.Err() != nil {
		t.Fatalf("the holder's lock: %v", held.Err())
	}
	// The short wait's client gave up when its context ended, which may be
	// before the server's wait took it out of the queue (a log entry of
	// its own): until then it still counts as a waiter, and the waiters
	// below, started as soon as the count rises, would not queue in order.
	for j := 0; lockWaiters(t, "report-job") != 0; j++ {
		if j > 1000 {
			t.Fatal("the short wait never left the queue")
		}
		time.Sleep(10 * time.Millisecond)
	}
	const n = 3
	var (
		mu     sync.Mutex
		fences []uint64
		order  []int
		wg     sync.WaitGroup
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			wc, err := client.New(client.Config{APIs: []string{apis[i%len(apis)]}})
			if err != nil {
				t.Error(err)
				return
			}
			l, err := wc.Lock(ctx, "report-job", 10*time.Second)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order, fences = append(order, i), append(fences, l.Fence)
			mu.Unlock()
			if err := l.Unlock(ctx); err != nil {
				t.Errorf("waiter %d's unlock: %v", i, err)
			}
		}(i)
		for j := 0; lockWaiters(t, "report-job") != i+1; j++ {
			if j > 1000 {
				t.Fatalf("waiter %d never queued", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(held.Err(), client.ErrLockReleased) {
		t.Fatalf("Err after Unlock: %v", held.Err())
	}
	if err := held.Unlock(ctx); !errors.Is(err, client.ErrLockReleased) {
		t.Fatalf("a second Unlock: %v", err)
	}
	wg.Wait()
	prev := held.Fence
	for pos := range order {
		if order[pos] != pos || fences[pos] <= prev {
			t.Fatalf("granted %v with fences %v after %d: want FIFO order, rising", order, fences, held.Fence)
		}
		prev = fences[pos]
	}
}
