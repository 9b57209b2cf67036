package fsm

import (
	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// expire removes the entries a sweeper found due. Each is removed only if it
// is due by the state machine's clock and the stored thing still expires at
// exactly that time (a key rewritten since the sweep keeps its new life).
// Stale index entries are dropped either way. Re-proposing the same batch
// is harmless. What was removed is counted by kind (ExpiredCount), not in
// the result: no result field means something else for an expire.
func (a *applier) expire(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	for _, e := range c.Entries {
		if e.At > a.now {
			continue
		}
		if err := deleteExpiry(tx, e.Kind, e.Key, e.At); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		removed, err := a.expireOne(tx, e, rev)
		if err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		if removed {
			a.expiredDelta[e.Kind]++
		}
	}
	return &command.Result{Code: command.CodeOK}
}

// expireOne removes one due entry; rev is the expire's revision, the fence
// of a lock it passes to a waiter.
func (a *applier) expireOne(tx *bolt.Tx, e ttl.Entry, rev uint64) (bool, error) {
	switch e.Kind {
	case ttl.KindRecord:
		v := tx.Bucket(bucketRecords).Get(e.Key)
		if v == nil {
			return false, nil
		}
		rec, err := command.DecodeRecord(v) // only its state and expiry are read, before the delete
		if err != nil || rec.ExpiresAt != e.At {
			return false, nil
		}
		a.recordDelta[rec.State]--
		a.removed = append(a.removed, clone(e.Key))
		if err := setLapse(tx, ttl.KindRecord, e.Key, recordLapse(rec), 0); err != nil {
			return false, err
		}
		return true, tx.Bucket(bucketRecords).Delete(e.Key)
	case ttl.KindToken:
		v := tx.Bucket(bucketTokens).Get(e.Key)
		if v == nil || int64(getUint64(v)) != e.At {
			return false, nil
		}
		return true, tx.Bucket(bucketTokens).Delete(e.Key)
	case ttl.KindKV:
		kv, ok := decodeKV(tx.Bucket(bucketKV).Get(e.Key))
		if !ok || kv.ExpiresAt != e.At {
			return false, nil
		}
		a.kvTouched(e.Key)
		if err := unindexKey(tx, e.Key, kv.Created); err != nil {
			return false, err
		}
		if kv.Kind.IsColl() {
			if err := a.dropColl(tx, kv); err != nil {
				return false, err
			}
		}
		return true, tx.Bucket(bucketKV).Delete(e.Key)
	case ttl.KindDigest:
		v := tx.Bucket(bucketDigests).Get(e.Key)
		if len(v) < 8 || int64(getUint64(v[:8])) != e.At {
			return false, nil
		}
		return true, tx.Bucket(bucketDigests).Delete(e.Key)
	case ttl.KindOnce:
		cl, err := command.DecodeClaim(tx.Bucket(bucketOnce).Get(e.Key))
		if err != nil || cl.ExpiresAt != e.At {
			return false, nil
		}
		if err := setLapse(tx, ttl.KindOnce, e.Key, claimLapse(cl), 0); err != nil {
			return false, err
		}
		return true, tx.Bucket(bucketOnce).Delete(e.Key)
	case ttl.KindLock:
		return a.expireLock(tx, e, rev)
	case ttl.KindLockWait:
		return a.expireLockWaiter(tx, e)
	}
	return false, nil
}

// The applier's rows of this file's commands (commands.go joins them).
var expireApplies = applies{
	command.TypeExpire: {apply: (*applier).expire},
}
