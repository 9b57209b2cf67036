package resp

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// wakeBound is how long a waiting locker may take to hold a lock once its
// holder released it. A waiter woken takes a round trip or two; one never
// told of the release waits forever (rueidislock retries only on an
// invalidation), so the bound only tells "woken" from "never".
const wakeBound = 20 * time.Second

// TestRueidisLockHandOver runs rueidislock as its README does
// (KeyMajority 1, NoLoopTracking: CLIENT TRACKING ON OPTOUT NOLOOP, a
// waiter retries when the lock's key is invalidated) with one locker per
// node of a 3-node cluster (and three against redis-server, the
// control): 30 hand-overs, each from a holder on one node to a waiter on
// another (or the same), the waiter known to have been refused before
// the holder releases. Every waiter must then be told: one not holding
// the lock within wakeBound must have had an invalidation since its last
// refused attempt began, or the release never reached its connection.
// (rueidislock itself, on redis-server too, now and then waits on after
// it was told, when the machine is slow, as under -race: logged only.)
//
// One option differs from the README: TryNextAfter, the bound of one
// attempt (20 ms by default), is long. An attempt that outlives it strands
// the locker on redis-server too, and no server can help it: the EVAL
// after a NOSCRIPT is then never sent (the locker waits on a free lock
// that nothing will change), or the SET that did happen is deleted by the
// locker itself, of which NOLOOP tells it nothing. A script on this
// cluster takes a round trip to the leader or two, and a loaded 2-core
// machine stretches it past 20 ms; so does -race on redis-server. This
// test is of the server: that every change reaches every reader.
func TestRueidisLockHandOver(t *testing.T) {
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	tc.rc.WaitLeader(5 * time.Second)
	for _, target := range []struct {
		name  string
		addrs []string
	}{
		{"redis-server", []string{redisAddr, redisAddr, redisAddr}},
		{"idemgate", tc.addrs},
	} {
		t.Run(target.name, func(t *testing.T) {
			if lost := lockHandOvers(t, target.addrs, 30); lost > 0 {
				t.Fatalf("%d of 30 waiters were never told of the release (each waited %s)", lost, wakeBound)
			}
		})
	}
}

// refusals counts the acquisitions of a locker that found the lock held:
// rueidislock's acquiring scripts answer nil then, and only then.
// It also notes when the locker's last refused attempt began and when
// its connection last brought an invalidation (or was lost, which rueidis
// reports as one): the server has told a waiter once an invalidation came
// after the attempt that read the key held began.
type refusals struct {
	rueidis.Client
	n           atomic.Int64
	seq         atomic.Int64 // orders the two below
	lastRefused atomic.Int64 // seq when the last refused attempt began
	lastTold    atomic.Int64 // seq of the last invalidation
}

func (r *refusals) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	args := cmd.Commands() // read before Do, which recycles them
	acquiring := len(args) > 0 && isEval(strings.ToLower(args[0]))
	began := r.seq.Add(1)
	res := r.Client.Do(ctx, cmd)
	if acquiring && rueidis.IsRedisNil(res.Error()) {
		r.lastRefused.Store(began)
		r.n.Add(1)
	}
	return res
}

// told reports whether an invalidation came after the last refused
// attempt began.
func (r *refusals) told() bool { return r.lastTold.Load() > r.lastRefused.Load() }

// lockHandOvers runs rounds hand-overs of one lock between lockers on
// addrs and returns how many waiters, not woken within wakeBound, had
// not been told of a change since their last refusal either.
func lockHandOvers(t *testing.T, addrs []string, rounds int) (lost int) {
	t.Helper()
	name := fmt.Sprintf("handover-%d", time.Now().UnixNano())
	type locker struct {
		l rueidislock.Locker
		r *refusals
	}
	var lockers []locker
	for _, addr := range addrs {
		r := &refusals{}
		l, err := rueidislock.NewLocker(rueidislock.LockerOption{
			ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}},
			KeyMajority:    1,
			NoLoopTracking: true,
			TryNextAfter:   wakeBound,
			ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
				wake := o.OnInvalidations // rueidislock's
				o.OnInvalidations = func(m []rueidis.RedisMessage) {
					r.lastTold.Store(r.seq.Add(1))
					wake(m)
				}
				c, err := rueidis.NewClient(o)
				r.Client = c
				return r, err
			},
		})
		if err != nil {
			t.Fatalf("NewLocker(%s): %v", addr, err)
		}
		t.Cleanup(l.Close)
		lockers = append(lockers, locker{l, r})
	}
	ctx := ctxT(t, time.Duration(rounds)*(wakeBound+10*time.Second))
	_, release, err := lockers[0].l.WithContext(ctx, name)
	if err != nil {
		t.Fatalf("first WithContext: %v", err)
	}
	n, holder := len(lockers), 0
	for i := 0; i < rounds; i++ {
		// The waiter is the holder's next locker, or (every other n
		// rounds) the one after: every pair of nodes hands over.
		next := (holder + 1 + (i/n)%(n-1)) % n
		w := lockers[next]
		before := w.r.n.Load()
		type held struct {
			release context.CancelFunc
			err     error
		}
		got := make(chan held, 1)
		wctx, cancelWait := context.WithCancel(ctx)
		go func() {
			_, rel, err := w.l.WithContext(wctx, name)
			got <- held{rel, err}
		}()
		waitUntil(t, fmt.Sprintf("round %d: the waiter refused", i), func() bool { return w.r.n.Load() > before })
		release()
		released := time.Now()
		select {
		case h := <-got:
			if d := time.Since(released); d > time.Second {
				t.Logf("round %d: woken after %s", i, d)
			}
			if h.err != nil {
				cancelWait()
				t.Fatalf("round %d: WithContext: %v", i, h.err)
			}
			// wctx is the lock's parent: cancelling it releases the lock.
			release, holder = func() { h.release(); cancelWait() }, next
		case <-time.After(wakeBound):
			if !w.r.told() {
				lost++
				t.Logf("round %d: the waiter on %s was never told of the release", i, addrs[next])
			} else {
				// rueidislock's own: it was told, and waits on.
				t.Logf("round %d: the waiter on %s was told of the release, but did not retry within %s", i, addrs[next], wakeBound)
			}
			cancelWait()
			if h := <-got; h.err == nil {
				release, holder = h.release, next // it got there as it gave up (and lost it again: its parent is done)
				break
			}
			// Take the free lock on another locker, to go on.
			holder = (next + 1) % n
			_, release, err = lockers[holder].l.WithContext(ctx, name)
			if err != nil {
				t.Fatalf("round %d: retaking the lock: %v", i, err)
			}
		}
	}
	release()
	return lost
}
