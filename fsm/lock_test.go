package fsm

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// lockHarness applies lock commands to a real state machine on a bbolt
// file, and records the grants its observer is told.
type lockHarness struct {
	*harness
	name   []byte
	grants []command.LockGrant
}

func newLock(t *testing.T) *lockHarness {
	h := newHarness(t)
	h.clock = tableStamp
	l := &lockHarness{harness: h, name: []byte("orders")}
	h.f.SetLockObserver(func(g []command.LockGrant) { l.grants = append(l.grants, g...) })
	return l
}

func owner(n byte) []byte { return bytes.Repeat([]byte{n}, command.LockOwnerLen) }

func (l *lockHarness) acquire(o byte, ttl, wait time.Duration) *command.Result {
	return l.apply(*command.LockAcquireCommand(l.name, owner(o), ttl, wait))
}

// lastGrant returns the observer's last grant, which must be to owner o.
func (l *lockHarness) lastGrant(o byte) command.LockGrant {
	l.t.Helper()
	if len(l.grants) == 0 {
		l.t.Fatalf("no grant told, want one to owner %d", o)
	}
	g := l.grants[len(l.grants)-1]
	if !bytes.Equal(g.Owner, owner(o)) || !bytes.Equal(g.Name, l.name) {
		l.t.Fatalf("last grant %q to %x, want %q to owner %d", g.Name, g.Owner, l.name, o)
	}
	return g
}

// TestLockFIFO queues three waiters behind a holder and checks that each
// release grants the lock to the queue's head in the same apply, in
// ticket order, with a fence higher than every one before; a waiter that
// left is skipped, and a newcomer never jumps the queue.
func TestLockFIFO(t *testing.T) {
	l := newLock(t)
	first := l.acquire(1, 10*time.Second, 0)
	if first.Code != command.CodeCreated || first.Fence == 0 || first.ExpiresAt != l.clock+int64(10*time.Second) {
		t.Fatalf("first acquire = %+v", first)
	}
	if r := l.acquire(9, time.Second, 0); r.Code != command.CodeExists || r.Err() != command.ErrExists || r.Fence != 0 {
		t.Fatalf("acquire of a held lock without wait = %+v, want CodeExists and no fence shown", r)
	}
	var tickets []uint64
	for o := byte(2); o <= 4; o++ {
		r := l.acquire(o, 10*time.Second, time.Minute)
		if r.Code != command.CodeQueued || r.Version == 0 || r.ExpiresAt != l.clock+int64(time.Minute) {
			t.Fatalf("waiter %d = %+v, want queued", o, r)
		}
		tickets = append(tickets, r.Version)
	}
	if st, _ := l.f.LockState(l.name, l.now()); st.Waiters != 3 || st.Fence != first.Fence {
		t.Fatalf("state = %+v, want 3 waiters behind fence %d", st, first.Fence)
	}
	// Waiter 3 gives up: it leaves by its ticket.
	if r := l.apply(*command.LockLeaveCommand(l.name, owner(3), tickets[1])); r.Code != command.CodeOK {
		t.Fatalf("leave = %+v", r)
	}
	if r := l.apply(*command.LockLeaveCommand(l.name, owner(3), tickets[1])); r.Code != command.CodeNotFound {
		t.Fatalf("leave again = %+v, want not found", r)
	}
	l.advance(time.Second)
	if r := l.apply(*command.LockReleaseCommand(l.name, first.Fence)); r.Code != command.CodeOK {
		t.Fatalf("release = %+v", r)
	}
	g2 := l.lastGrant(2)
	if g2.Fence <= first.Fence || g2.LeaseEnd != l.clock+int64(10*time.Second) {
		t.Fatalf("grant to 2 = %+v, want a fence over %d and a lease from the release", g2, first.Fence)
	}
	// A newcomer while 4 waits queues behind it.
	r5 := l.acquire(5, 10*time.Second, time.Minute)
	if r5.Code != command.CodeQueued || r5.Version <= tickets[2] {
		t.Fatalf("newcomer = %+v, want queued after ticket %d", r5, tickets[2])
	}
	if r := l.apply(*command.LockReleaseCommand(l.name, first.Fence)); r.Code != command.CodeFenceMismatch || r.Fence != 0 {
		t.Fatalf("release by the old fence = %+v, want a mismatch that shows no fence", r)
	}
	if r := l.apply(*command.LockReleaseCommand(l.name, g2.Fence)); r.Code != command.CodeOK {
		t.Fatalf("release by 2 = %+v", r)
	}
	g4 := l.lastGrant(4)
	if r := l.apply(*command.LockReleaseCommand(l.name, g4.Fence)); r.Code != command.CodeOK {
		t.Fatalf("release by 4 = %+v", r)
	}
	g5 := l.lastGrant(5)
	if !(first.Fence < g2.Fence && g2.Fence < g4.Fence && g4.Fence < g5.Fence) {
		t.Fatalf("fences %d %d %d %d do not rise", first.Fence, g2.Fence, g4.Fence, g5.Fence)
	}
	if r := l.apply(*command.LockReleaseCommand(l.name, g5.Fence)); r.Code != command.CodeOK {
		t.Fatalf("release by 5 = %+v", r)
	}
	if _, err := l.f.LockState(l.name, l.now()); !errors.Is(err, command.ErrNotFound) {
		t.Fatalf("state after the last release: %v, want not found", err)
	}
	if again := l.acquire(1, time.Second, 0); again.Code != command.CodeCreated || again.Fence <= g5.Fence {
		t.Fatalf("acquire after all = %+v, want a fence over %d", again, g5.Fence)
	}
	if n := len(l.grants); n != 5 {
		t.Fatalf("%d grants told, want 5", n)
	}
}

// TestLockExpiry: a holder whose lease ran out (a crashed client) loses the
// lock to the next waiter through the TTL index, with a higher fence; its
// renew and release are refused from then on; a waiter whose node died is
// never granted after its wait and its entry goes by the index too.
func TestLockExpiry(t *testing.T) {
	l := newLock(t)
	first := l.acquire(1, time.Second, 0)
	dead := l.acquire(2, time.Second, 500*time.Millisecond) // its node dies: it never leaves
	live := l.acquire(3, 5*time.Second, time.Minute)
	if dead.Code != command.CodeQueued || live.Code != command.CodeQueued {
		t.Fatalf("waiters = %+v %+v", dead, live)
	}
	l.advance(time.Second)
	due := l.due()
	if len(due) != 2 {
		t.Fatalf("due = %+v, want the holder's lease and the dead waiter", due)
	}
	l.apply(*command.ExpireCommand(due))
	g := l.lastGrant(3)
	if g.Fence <= first.Fence || g.LeaseEnd != l.clock+int64(5*time.Second) {
		t.Fatalf("grant after expiry = %+v", g)
	}
	if n := l.f.ExpiredCount(ttl.KindLock); n != 1 {
		t.Fatalf("expired locks = %d, want 1", n)
	}
	if n := l.f.ExpiredCount(ttl.KindLockWait); n != 1 {
		t.Fatalf("expired waiters = %d, want 1", n)
	}
	if r := l.apply(*command.LockRenewCommand(l.name, first.Fence, time.Second)); r.Code != command.CodeFenceMismatch {
		t.Fatalf("renew after expiry = %+v", r)
	}
	if r := l.apply(*command.LockReleaseCommand(l.name, first.Fence)); r.Code != command.CodeFenceMismatch {
		t.Fatalf("release after expiry = %+v", r)
	}
	if r := l.apply(*command.LockRenewCommand(l.name, g.Fence, 20*time.Second)); r.Code != command.CodeOK || r.ExpiresAt != l.clock+int64(20*time.Second) {
		t.Fatalf("renew by the holder = %+v", r)
	}
	if st, err := l.f.LockState(l.name, l.now()); err != nil || st.Waiters != 0 || st.LeaseEnd != l.clock+int64(20*time.Second) {
		t.Fatalf("state = %+v %v", st, err)
	}
	// The renewed lease's old index entry is gone: nothing is due early.
	l.advance(10 * time.Second)
	if due := l.due(); len(due) != 0 {
		t.Fatalf("due after a renew = %+v", due)
	}
	// A lease that ran out with no sweep yet: the next acquire sees it free.
	l.advance(11 * time.Second)
	if r := l.acquire(4, time.Second, 0); r.Code != command.CodeCreated || r.Fence <= g.Fence {
		t.Fatalf("acquire after a lapsed lease = %+v", r)
	}
	if r := l.apply(*command.LockReleaseCommand(l.name, g.Fence)); r.Code != command.CodeFenceMismatch {
		t.Fatalf("late release = %+v", r)
	}
}

// TestLockLeaveAfterGrant: a waiter whose grant raced with its giving up
// gives the lock back, to the next waiter.
func TestLockLeaveAfterGrant(t *testing.T) {
	l := newLock(t)
	first := l.acquire(1, time.Minute, 0)
	w := l.acquire(2, time.Minute, time.Minute)
	l.acquire(3, time.Minute, time.Minute)
	l.apply(*command.LockReleaseCommand(l.name, first.Fence))
	l.lastGrant(2)
	if r := l.apply(*command.LockLeaveCommand(l.name, owner(2), w.Version)); r.Code != command.CodeOK {
		t.Fatalf("leave after the grant = %+v", r)
	}
	l.lastGrant(3)
	if st, _ := l.f.LockState(l.name, l.now()); !bytes.Equal(st.Owner, owner(3)) || st.Waiters != 0 {
		t.Fatalf("state = %+v", st)
	}
}

// TestLockHostile: bad names, owners and durations are refused before
// anything is applied; a wrong fence changes nothing.
func TestLockHostile(t *testing.T) {
	for _, c := range []struct {
		name string
		cmd  *command.Command
	}{
		{"empty name", command.LockAcquireCommand(nil, owner(1), time.Second, 0)},
		{"slash", command.LockAcquireCommand([]byte("a/b"), owner(1), time.Second, 0)},
		{"NUL", command.LockAcquireCommand([]byte("a\x00b"), owner(1), time.Second, 0)},
		{"space", command.LockAcquireCommand([]byte("a b"), owner(1), time.Second, 0)},
		{"long name", command.LockAcquireCommand(bytes.Repeat([]byte("a"), command.MaxLockName+1), owner(1), time.Second, 0)},
		{"short owner", command.LockAcquireCommand([]byte("a"), []byte("x"), time.Second, 0)},
		{"zero ttl", command.LockAcquireCommand([]byte("a"), owner(1), 0, 0)},
		{"huge ttl", command.LockAcquireCommand([]byte("a"), owner(1), command.MaxTTL+1, 0)},
		{"negative wait", command.LockAcquireCommand([]byte("a"), owner(1), time.Second, -1)},
		{"renew zero ttl", command.LockRenewCommand([]byte("a"), 1, 0)},
		{"renew fence 0", command.LockRenewCommand([]byte("a"), 0, time.Second)},
		{"release fence 0", command.LockReleaseCommand([]byte("a"), 0)},
		{"leave bad owner", command.LockLeaveCommand([]byte("a"), nil, 1)},
	} {
		if err := c.cmd.Validate(); !errors.Is(err, command.ErrBadCommand) {
			t.Errorf("%s: Validate = %v, want ErrBadCommand", c.name, err)
		}
	}
	l := newLock(t)
	r := l.acquire(1, time.Minute, 0)
	for _, f := range []uint64{r.Fence + 1, r.Fence + 2, 1 << 62} {
		if res := l.apply(*command.LockReleaseCommand(l.name, f)); res.Code != command.CodeFenceMismatch || res.Err() != command.ErrFenceMismatch {
			t.Fatalf("release fence %d = %+v", f, res)
		}
		if res := l.apply(*command.LockRenewCommand(l.name, f, time.Hour)); res.Code != command.CodeFenceMismatch {
			t.Fatalf("renew fence %d = %+v", f, res)
		}
	}
	if st, _ := l.f.LockState(l.name, l.now()); st.Fence != r.Fence || st.LeaseEnd != r.ExpiresAt {
		t.Fatalf("state after wrong fences = %+v, want untouched", st)
	}
}

// TestLockManyWaiters queues 10,000 waiters on one lock, in batches as a
// leader's group commit makes them: they live on disk, not in memory, a
// release grants the first, and the queue's order holds for the rest.
func TestLockManyWaiters(t *testing.T) {
	l := newLock(t)
	first := l.acquire(1, time.Hour, 0)
	const n = 10_000
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i += MaxBatchCommands {
		var enc [][]byte
		for j := i; j < min(i+MaxBatchCommands, n); j++ {
			o := make([]byte, command.LockOwnerLen)
			o[0], o[1], o[2] = 7, byte(j), byte(j>>8)
			c := command.LockAcquireCommand(l.name, o, time.Hour, time.Hour)
			c.Stamp = l.clock
			enc = append(enc, c.Encode(nil))
		}
		l.index++
		out := l.f.ApplyBatch([]*raft.Log{{Index: l.index, Term: 1, Type: raft.LogCommand, Data: EncodeBatch(enc)}})
		for _, r := range out[0].(Results) {
			if r.Code != command.CodeQueued {
				t.Fatalf("waiter: %+v", r)
			}
		}
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 32<<20 {
		t.Fatalf("the heap grew %d bytes for %d waiters", grown, n)
	}
	if st, _ := l.f.LockState(l.name, l.now()); st.Waiters != n {
		t.Fatalf("waiters = %d, want %d", st.Waiters, n)
	}
	fence := first.Fence
	for want := 0; want < 3; want++ {
		if r := l.apply(*command.LockReleaseCommand(l.name, fence)); r.Code != command.CodeOK {
			t.Fatalf("release: %+v", r)
		}
		g := l.grants[len(l.grants)-1]
		if g.Owner[0] != 7 || int(g.Owner[1])|int(g.Owner[2])<<8 != want {
			t.Fatalf("grant %d went to %x", want, g.Owner)
		}
		fence = g.Fence
	}
	if st, _ := l.f.LockState(l.name, l.now()); st.Waiters != n-3 {
		t.Fatalf("waiters = %d, want %d", st.Waiters, n-3)
	}
}

// due returns the TTL index's entries due now.
func (l *lockHarness) due() []ttl.Entry {
	l.t.Helper()
	var out []ttl.Entry
	err := l.f.view(func(tx *bolt.Tx) error {
		var err error
		out, err = dueExpiries(tx, l.clock, 100)
		return err
	})
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}

// TestLockSurvivesRestore: a held lock, its queue, their index entries and
// the revision fences come from travel in a snapshot: on the restored
// replica the holder's release grants the queued waiter with a higher
// fence, and the lease's expiry is still due.
func TestLockSurvivesRestore(t *testing.T) {
	l := newLock(t)
	first := l.acquire(1, time.Minute, 0)
	if r := l.acquire(2, time.Minute, time.Hour); r.Code != command.CodeQueued {
		t.Fatalf("waiter: %+v", r)
	}
	g := newHarness(t)
	if err := g.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, l.f)))); err != nil {
		t.Fatal(err)
	}
	var grants []command.LockGrant
	g.f.SetLockObserver(func(gs []command.LockGrant) { grants = append(grants, gs...) })
	g.clock, g.index = l.clock+int64(time.Second), l.index
	if st, err := g.f.LockState(l.name, g.now()); err != nil || st.Fence != first.Fence || st.Waiters != 1 {
		t.Fatalf("restored lock: %+v %v", st, err)
	}
	if due, err := g.f.Due(time.Unix(0, g.clock+int64(2*time.Minute)), 10); err != nil || len(due) != 1 || due[0].Kind != ttl.KindLock {
		t.Fatalf("the restored lock's index entries: %v %v", due, err)
	}
	if r := g.apply(*command.LockReleaseCommand(l.name, first.Fence)); r.Code != command.CodeOK {
		t.Fatalf("release on the restored replica: %+v", r)
	}
	if len(grants) != 1 || !bytes.Equal(grants[0].Owner, owner(2)) || grants[0].Fence <= first.Fence {
		t.Fatalf("grants on the restored replica: %+v (first fence %d)", grants, first.Fence)
	}
}
