package fsm

import (
	"encoding/binary"
	"time"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// Fair locks with fencing. A lock is held by one owner (a token its
// waiting request chose) under a lease; callers that asked to wait are
// queued behind it in the order their acquires were applied, each under
// its own ticket (the acquire's revision, as etcd's concurrency.Mutex
// queues its waiters by the revision of their keys). The apply that frees
// a lock (a release, the holder's lease running out, a holder giving up)
// grants it to the queue's head in the same apply, so no waiter polls and
// nobody jumps the queue; the node where that waiter's request waits
// learns of the grant from its own apply (SetLockObserver).
//
// The fence is the revision of the command that granted the lock
// (applier.nextRev): strictly increasing per name across leader changes,
// releases and expiry, as a once claim's. Lease ends and a waiter's give-up
// time are the state machine's clock plus a duration, never a node's
// clock. The holder's lease end is in the TTL index (ttl.KindLock), so a
// crashed holder's lock passes to the next waiter when it runs out; each
// waiter's give-up time is too (ttl.KindLockWait), so the entry of a
// waiter whose node died goes by itself, and is never granted after it.
//
// A lock is stored only while held: a name's queue is non-empty only
// behind a holder.

// lockQueueKey is a waiter's key in the queue bucket: the name, NUL, the
// ticket big-endian, so that a name's waiters sort by ticket. Names hold
// no NUL (CheckLockName).
func lockQueueKey(name []byte, ticket uint64) []byte {
	k := make([]byte, 0, len(name)+9)
	k = append(append(k, name...), 0)
	return binary.BigEndian.AppendUint64(k, ticket)
}

// lockQueuePrefix is the prefix of name's waiters' keys.
func lockQueuePrefix(name []byte) []byte { return append(clone(name), 0) }

// (never taken, released, or its lease ran out with nobody waiting).
func (f *FSM) LockState(name []byte, now time.Time) (*command.Lock, error) {
	at := f.readNow(now)
	var out *command.Lock
	err := f.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketLocks).Get(name)
		if v == nil {
			return command.ErrNotFound
		}
		l, err := command.DecodeLock(v)
		if err != nil {
			return err
		}
		if l.LeaseEnd <= at && l.Waiters == 0 {
			return command.ErrNotFound
		}
		out = l
		return nil
	})
	return out, err
}

// SetLockObserver registers fn to be told, after each commit, the grants
// that batch made. It runs on the apply path: it must be quick and must not
// call back into the FSM.
func (f *FSM) SetLockObserver(fn func(grants []command.LockGrant)) { f.onGrant.Store(&fn) }
