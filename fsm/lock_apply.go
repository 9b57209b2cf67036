package fsm

import (
	"bytes"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// getLock returns the lock stored under name, or nil, as stored (its lease
// may have run out: the caller passes it on).
func (a *applier) getLock(tx *bolt.Tx, name []byte) (*command.Lock, error) {
	v := tx.Bucket(bucketLocks).Get(name)
	if v == nil {
		return nil, nil
	}
	return command.DecodeLock(v)
}

// putLock stores l under name, moving its lease end's index entry from
// old's.
func (a *applier) putLock(tx *bolt.Tx, name []byte, old, l *command.Lock) error {
	if old != nil && old.LeaseEnd != l.LeaseEnd {
		if err := deleteExpiry(tx, ttl.KindLock, name, old.LeaseEnd); err != nil {
			return err
		}
	}
	if old == nil || old.LeaseEnd != l.LeaseEnd {
		if err := putExpiry(tx, ttl.KindLock, name, l.LeaseEnd); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketLocks).Put(name, l.Encode(nil))
}

// grant makes owner the holder of name with a lease of ttl from now and
// the fence rev, and tells the observer after the commit.
func (a *applier) grant(tx *bolt.Tx, name []byte, old *command.Lock, owner []byte, ttlNS int64, waiters uint64, rev uint64) (*command.Lock, error) {
	l := &command.Lock{Fence: rev, Owner: clone(owner), AcquiredAt: a.now, LeaseEnd: a.now + ttlNS, Waiters: waiters}
	if err := a.putLock(tx, name, old, l); err != nil {
		return nil, err
	}
	if !a.readOnly {
		a.grants = append(a.grants, command.LockGrant{Name: clone(name), Owner: l.Owner, Fence: l.Fence, LeaseEnd: l.LeaseEnd})
	}
	return l, nil
}

// pass frees the lock old (released, given back, or its lease ran out) and
// grants it, with the fence rev, to the first waiter in ticket order that
// has not given up; waiters that have are dropped on the way. It returns
// the new holder, or nil when nobody waited (the lock is deleted).
func (a *applier) pass(tx *bolt.Tx, name []byte, old *command.Lock, rev uint64) (*command.Lock, error) {
	q := tx.Bucket(bucketLockQ)
	prefix := lockQueuePrefix(name)
	waiters := old.Waiters
	var drop [][]byte
	var next *command.LockWaiter
	cur := q.Cursor()
	for k, v := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = cur.Next() {
		w, err := command.DecodeLockWaiter(v)
		if err != nil {
			return nil, err
		}
		drop = append(drop, clone(k))
		if err := deleteExpiry(tx, ttl.KindLockWait, k, w.WaitEnd); err != nil {
			return nil, err
		}
		if waiters > 0 {
			waiters--
		}
		if w.WaitEnd > a.now {
			next = w
			break
		}
		a.expiredDelta[ttl.KindLockWait]++
	}
	for _, k := range drop { // not during the walk: a bbolt cursor skips after a delete
		if err := q.Delete(k); err != nil {
			return nil, err
		}
	}
	if next != nil {
		return a.grant(tx, name, old, next.Owner, next.TTL, waiters, rev)
	}
	if err := deleteExpiry(tx, ttl.KindLock, name, old.LeaseEnd); err != nil {
		return nil, err
	}
	return nil, tx.Bucket(bucketLocks).Delete(name)
}

// live returns the lock under name as it stands now: a holder whose lease
// ran out passes it on first (so a waiter, not the caller, gets it next).
func (a *applier) live(tx *bolt.Tx, name []byte, rev uint64) (*command.Lock, error) {
	l, err := a.getLock(tx, name)
	if err != nil || l == nil || l.LeaseEnd > a.now {
		return l, err
	}
	a.expiredDelta[ttl.KindLock]++
	return a.pass(tx, name, l, rev)
}

// lockAcquire grants a free lock to the caller, or queues the caller
// behind the holder (and any earlier waiter) when it asked to wait.
func (a *applier) lockAcquire(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	old, err := a.live(tx, c.Key, rev)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	switch {
	case old == nil:
		l, err := a.grant(tx, c.Key, nil, c.Value, int64(c.Timeout), 0, rev)
		if err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		return &command.Result{Code: command.CodeCreated, Fence: l.Fence, ExpiresAt: l.LeaseEnd}
	case bytes.Equal(old.Owner, c.Value):
		// The owner's own acquire again (its grant came while its
		// acquire was retried under another request id): it holds it.
		return &command.Result{Code: command.CodeCreated, Fence: old.Fence, ExpiresAt: old.LeaseEnd}
	case c.TTL == 0:
		return &command.Result{Code: command.CodeExists, ExpiresAt: old.LeaseEnd}
	case old.Waiters >= command.MaxLockWaiters:
		return &command.Result{Code: command.CodeQueueFull, ExpiresAt: old.LeaseEnd}
	}
	w := &command.LockWaiter{Owner: c.Value, TTL: int64(c.Timeout), WaitEnd: a.now + int64(c.TTL)}
	qk := lockQueueKey(c.Key, rev)
	if err := putExpiry(tx, ttl.KindLockWait, qk, w.WaitEnd); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if err := tx.Bucket(bucketLockQ).Put(qk, w.Encode(nil)); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	l := *old
	l.Waiters++
	if err := a.putLock(tx, c.Key, old, &l); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeQueued, Version: rev, ExpiresAt: w.WaitEnd}
}

// held returns the live lock under c.Key if c.Fence holds it; else
// CodeFenceMismatch, with the lease end of a holder of c.Fence whose lease
// ran out (the face says why), never another holder's fence.
func (a *applier) held(tx *bolt.Tx, c *command.Command, rev uint64) (*command.Lock, *command.Result) {
	l, err := a.getLock(tx, c.Key)
	if err != nil {
		return nil, &command.Result{Code: command.CodeStorage}
	}
	if l != nil && l.Fence == c.Fence && l.LeaseEnd <= a.now {
		if _, err := a.live(tx, c.Key, rev); err != nil {
			return nil, &command.Result{Code: command.CodeStorage}
		}
		return nil, &command.Result{Code: command.CodeFenceMismatch, ExpiresAt: l.LeaseEnd}
	}
	if l == nil || l.Fence != c.Fence {
		return nil, &command.Result{Code: command.CodeFenceMismatch}
	}
	return l, nil
}

// lockRenew extends the holder's lease by c.Timeout from now, only while
// it is live: once it ran out the lock may be another's.
func (a *applier) lockRenew(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	old, res := a.held(tx, c, rev)
	if res != nil {
		return res
	}
	l := *old
	l.LeaseEnd = a.now + int64(c.Timeout)
	if err := a.putLock(tx, c.Key, old, &l); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK, Fence: l.Fence, ExpiresAt: l.LeaseEnd}
}

// lockRelease frees the holder's lock and grants it to the next waiter,
// whose fence is this release's revision.
func (a *applier) lockRelease(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	old, res := a.held(tx, c, rev)
	if res != nil {
		return res
	}
	if _, err := a.pass(tx, c.Key, old, rev); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK}
}

// lockLeave takes a waiter that gave up out of the queue, or, when its
// grant came first, gives the lock back to the next waiter. The queue
// entry goes first, so that a lapsed holder's lock passed on in this same
// command never goes to the waiter that is leaving.
func (a *applier) lockLeave(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	if c.Version != 0 {
		qk := lockQueueKey(c.Key, c.Version)
		if v := tx.Bucket(bucketLockQ).Get(qk); v != nil {
			w, err := command.DecodeLockWaiter(v)
			if err != nil {
				return &command.Result{Code: command.CodeStorage}
			}
			l, err := a.getLock(tx, c.Key)
			if err != nil {
				return &command.Result{Code: command.CodeStorage}
			}
			switch {
			case !bytes.Equal(w.Owner, c.Value):
			case l == nil: // cannot happen (a queue only behind a holder): the entry goes alone
				if deleteExpiry(tx, ttl.KindLockWait, qk, w.WaitEnd) != nil || tx.Bucket(bucketLockQ).Delete(qk) != nil {
					return &command.Result{Code: command.CodeStorage}
				}
				return &command.Result{Code: command.CodeOK}
			default:
				if err := a.dropWaiter(tx, qk, w, l); err != nil {
					return &command.Result{Code: command.CodeStorage}
				}
				return &command.Result{Code: command.CodeOK}
			}
		}
	}
	l, err := a.live(tx, c.Key, rev)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if l == nil || !bytes.Equal(l.Owner, c.Value) {
		return &command.Result{Code: command.CodeNotFound}
	}
	if _, err := a.pass(tx, c.Key, l, rev); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK}
}

// dropWaiter removes the waiter w queued under qk behind the holder l.
func (a *applier) dropWaiter(tx *bolt.Tx, qk []byte, w *command.LockWaiter, l *command.Lock) error {
	if err := deleteExpiry(tx, ttl.KindLockWait, qk, w.WaitEnd); err != nil {
		return err
	}
	if err := tx.Bucket(bucketLockQ).Delete(qk); err != nil {
		return err
	}
	nl := *l
	if nl.Waiters > 0 {
		nl.Waiters--
	}
	return a.putLock(tx, qk[:len(qk)-9], l, &nl)
}

// expireLock passes a lock whose holder's lease ran out to the next
// waiter, with the expire's revision as its fence.
func (a *applier) expireLock(tx *bolt.Tx, e ttl.Entry, rev uint64) (bool, error) {
	l, err := a.getLock(tx, e.Key)
	if err != nil || l == nil || l.LeaseEnd != e.At {
		return false, nil
	}
	_, err = a.pass(tx, e.Key, l, rev)
	return err == nil, err
}

// expireLockWaiter drops a waiter that gave up without leaving (its node
// died, or its leave was lost).
func (a *applier) expireLockWaiter(tx *bolt.Tx, e ttl.Entry) (bool, error) {
	v := tx.Bucket(bucketLockQ).Get(e.Key)
	if v == nil || len(e.Key) < 9 {
		return false, nil
	}
	w, err := command.DecodeLockWaiter(v)
	if err != nil || w.WaitEnd != e.At {
		return false, nil
	}
	l, err := a.getLock(tx, e.Key[:len(e.Key)-9])
	if err != nil {
		return false, nil
	}
	if l == nil { // cannot happen (a queue only behind a holder); drop it alone
		return true, tx.Bucket(bucketLockQ).Delete(e.Key)
	}
	return true, a.dropWaiter(tx, e.Key, w, l)
}

// The applier's rows of this file's commands (commands.go joins them).
var lockApplies = applies{
	command.TypeLockAcquire: {remembered: true, apply: (*applier).lockAcquire},
	command.TypeLockRenew:   {remembered: true, apply: (*applier).lockRenew},
	command.TypeLockRelease: {remembered: true, apply: (*applier).lockRelease},
	command.TypeLockLeave:   {remembered: true, apply: (*applier).lockLeave},
}
