package resp

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// TestIdemLock: IDEM.LOCK / RENEWLOCK / UNLOCK over the protocol, as the
// HTTP API has them: a held lock answers -LOCKED to a caller without a
// wait; a caller that waits is granted the lock the moment its holder
// unlocks, with a higher fence; a stale fence is -STALEFENCE; a waiter
// whose connection closes leaves the queue; bad arguments are refused
// with one line each.
func TestIdemLock(t *testing.T) {
	m := memstore.New(t)
	srv := startServer(t, m, "mem", nil)
	ctx := context.Background()
	a, b := client(t, srv.Addr()), client(t, srv.Addr())
	first, err := a.Do(ctx, "IDEM.LOCK", "door", 60000).Slice()
	if err != nil || len(first) != 2 || first[0].(int64) <= 0 || first[1].(int64) < time.Now().UnixMilli() {
		t.Fatalf("IDEM.LOCK: %v %v", first, err)
	}
	f1 := first[0].(int64)
	if err := b.Do(ctx, "IDEM.LOCK", "door", 1000).Err(); err == nil || !strings.HasPrefix(err.Error(), "LOCKED ") {
		t.Fatalf("IDEM.LOCK of a held lock: %v, want LOCKED", err)
	}
	granted := make(chan []any, 1)
	go func() {
		v, err := b.Do(ctx, "IDEM.LOCK", "door", 60000, 60000).Slice()
		if err != nil {
			t.Errorf("waiting IDEM.LOCK: %v", err)
		}
		granted <- v
	}()
	waitQueued(t, m, "door", 1)
	if end, err := a.Do(ctx, "IDEM.RENEWLOCK", "door", f1, 120000).Int64(); err != nil || end < time.Now().Add(100*time.Second).UnixMilli() {
		t.Fatalf("IDEM.RENEWLOCK: %d %v", end, err)
	}
	if err := a.Do(ctx, "IDEM.UNLOCK", "door", f1).Err(); err != nil {
		t.Fatalf("IDEM.UNLOCK: %v", err)
	}
	second := <-granted
	if len(second) != 2 || second[0].(int64) <= f1 {
		t.Fatalf("the waiter's grant %v, want a fence over %d", second, f1)
	}
	// A waiter whose client goes away leaves the queue.
	gone := client(t, srv.Addr())
	go gone.Do(ctx, "IDEM.LOCK", "door", 1000, 300000)
	waitQueued(t, m, "door", 1)
	gone.Close()
	waitQueued(t, m, "door", 0)
	for _, c := range []struct {
		args []any
		want string
	}{
		{[]any{"IDEM.UNLOCK", "door", f1}, "STALEFENCE "},
		{[]any{"IDEM.RENEWLOCK", "door", f1, 1000}, "STALEFENCE "},
		{[]any{"IDEM.UNLOCK", "door", 0}, "ERR invalid fence"},
		{[]any{"IDEM.UNLOCK", "door", "x"}, "ERR invalid fence"},
		{[]any{"IDEM.LOCK", "a/b", 1000}, "ERR invalid lock name"},
		{[]any{"IDEM.LOCK", "", 1000}, "ERR invalid lock name"},
		{[]any{"IDEM.LOCK", strings.Repeat("n", 257), 1000}, "ERR invalid lock name"},
		{[]any{"IDEM.LOCK", "n", 0}, "ERR invalid ttl"},
		{[]any{"IDEM.LOCK", "n", 86400001}, "ERR invalid ttl"},
		{[]any{"IDEM.LOCK", "n", "soon"}, "ERR invalid ttl"},
		{[]any{"IDEM.LOCK", "n", 1000, -1}, "ERR invalid wait"},
		{[]any{"IDEM.LOCK", "n", 1000, 300001}, "ERR invalid wait"},
		{[]any{"IDEM.LOCK", "n", 1000, 1, 2}, "ERR syntax error"},
		{[]any{"IDEM.LOCK", "n"}, "ERR wrong number of arguments"},
		{[]any{"IDEM.RENEWLOCK", "door", second[0], 0}, "ERR invalid ttl"},
	} {
		err := a.Do(ctx, c.args...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: %v, want %s…", c.args, err, c.want)
		}
	}
	if err := b.Do(ctx, "IDEM.UNLOCK", "door", second[0]).Err(); err != nil {
		t.Fatalf("the second holder's IDEM.UNLOCK: %v", err)
	}
	if _, err := m.LockState(ctx, []byte("n"), true); err == nil {
		t.Fatal("a refused IDEM.LOCK took the lock n")
	}
}

// waitQueued waits, bounded by count, until name has want waiters.
func waitQueued(t *testing.T, m *memstore.Store, name string, want int) {
	t.Helper()
	got := -1
	for i := 0; i < 2000; i++ {
		if l, err := m.LockState(context.Background(), []byte(name), true); err == nil {
			if got = int(l.Waiters); got == want {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("lock %s has %d waiters, want %d", name, got, want)
}
