package command

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// MaxLockWaiters bounds a lock's queue: an acquire that would queue
// behind more is refused (CodeQueueFull). Each waiter is a small entry on
// disk; the bound keeps one hot name from growing without end.
const MaxLockWaiters = 100_000

// MaxLockName bounds a lock's name in bytes.
const MaxLockName = 256

// LockOwnerLen is the length of the owner token an acquire carries.
const LockOwnerLen = 16

// errLockName is why CheckLockName refused a name.
var errLockName = errors.New("a lock name is 1-256 bytes of letters, digits and . _ : @ -")

// CheckLockName checks a lock's name: 1-MaxLockName bytes of ASCII
// letters, digits and ". _ : @ -" (no slash: the name is one path segment
// of the HTTP API, and no NUL: the queue's keys put one after it).
func CheckLockName(name []byte) error {
	if len(name) == 0 || len(name) > MaxLockName {
		return errLockName
	}
	for _, b := range name {
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		case b == '.' || b == '_' || b == ':' || b == '@' || b == '-':
		default:
			return errLockName
		}
	}
	return nil
}

// LockState returns the lock held under name; ErrNotFound when it is free

// LockAcquireCommand takes the lock name for the owner token owner with a
// lease of ttl, or queues it for up to wait (0: no wait). Its answers:
// CodeCreated (yours: the fence in Result.Fence, the lease end in
// ExpiresAt), CodeQueued (the ticket in Result.Version, the give-up time in
// ExpiresAt: the grant comes through SetLockObserver), CodeExists (held,
// and no wait asked: the holder's lease end in ExpiresAt), CodeQueueFull.
func LockAcquireCommand(name, owner []byte, ttl, wait time.Duration) *Command {
	return &Command{Type: TypeLockAcquire, Key: name, Value: owner, Timeout: ttl, TTL: wait}
}

// LockRenewCommand extends the lease of the holder of fence to ttl from
// now; CodeFenceMismatch once it lost the lock (released, ran out).
func LockRenewCommand(name []byte, fence uint64, ttl time.Duration) *Command {
	return &Command{Type: TypeLockRenew, Key: name, Fence: fence, Timeout: ttl}
}

// LockReleaseCommand frees the lock the holder of fence holds and grants
// it to the queue's head; CodeFenceMismatch when fence does not hold it.
func LockReleaseCommand(name []byte, fence uint64) *Command {
	return &Command{Type: TypeLockRelease, Key: name, Fence: fence}
}

// LockLeaveCommand takes the waiter of owner, queued under ticket, out of
// name's queue: its request gave up (its wait ran out, its client went
// away). A grant that raced with it is given back, to the next waiter.
// CodeOK when it left or gave back, CodeNotFound when it was neither
// queued nor holding.
func LockLeaveCommand(name, owner []byte, ticket uint64) *Command {
	return &Command{Type: TypeLockLeave, Key: name, Value: owner, Version: ticket}
}

func checkLockAcquire(c *Command) error {
	switch {
	case CheckLockName(c.Key) != nil:
		return errLockName
	case len(c.Value) != LockOwnerLen:
		return fmt.Errorf("a lock owner is %d bytes", LockOwnerLen)
	case c.Timeout <= 0:
		return errors.New("a lock ttl must be positive")
	case c.TTL < 0:
		return errors.New("a lock wait must not be negative")
	}
	return nil
}

func checkLockRenew(c *Command) error {
	if c.Timeout <= 0 {
		return errors.New("a lock ttl must be positive")
	}
	return checkLockFence(c)
}

func checkLockFence(c *Command) error {
	if err := CheckLockName(c.Key); err != nil {
		return err
	}
	return checkFence(c)
}

func checkLockLeave(c *Command) error {
	switch {
	case CheckLockName(c.Key) != nil:
		return errLockName
	case len(c.Value) != LockOwnerLen:
		return fmt.Errorf("a lock owner is %d bytes", LockOwnerLen)
	}
	return nil
}

// Lock is a held lock. Times are unix nanoseconds of the state machine's
// clock.
type Lock struct {
	Fence      uint64
	Owner      []byte // the holder's owner token (LockOwnerLen bytes)
	AcquiredAt int64
	LeaseEnd   int64
	Waiters    uint64 // waiters queued behind the holder
}

// LockWaiter is one queued acquire.
type LockWaiter struct {
	Owner   []byte
	TTL     int64 // the lease it asked for, from its grant
	WaitEnd int64 // it gave up then: never granted after
}

// LockGrant tells the node where a waiter waits that the lock is its own.
type LockGrant struct {
	Name     []byte
	Owner    []byte
	Fence    uint64
	LeaseEnd int64
}

const lockVersion = 1

// Encode appends the lock's encoding to dst.
func (l *Lock) Encode(dst []byte) []byte {
	dst = append(dst, lockVersion)
	dst = binary.AppendUvarint(dst, l.Fence)
	dst = appendBytes(dst, l.Owner)
	dst = binary.AppendVarint(dst, l.AcquiredAt)
	dst = binary.AppendVarint(dst, l.LeaseEnd)
	return binary.AppendUvarint(dst, l.Waiters)
}

// DecodeLock parses an encoded lock; its slices are its own.
func DecodeLock(b []byte) (*Lock, error) {
	rd := reader{b: b}
	if v := rd.byte(); v != lockVersion && rd.err == nil {
		return nil, fmt.Errorf("%w: lock version %d", ErrBadCommand, v)
	}
	l := &Lock{Fence: rd.uvarint(), Owner: append([]byte(nil), rd.bytes()...)}
	l.AcquiredAt = rd.varint()
	l.LeaseEnd = rd.varint()
	l.Waiters = rd.uvarint()
	switch {
	case rd.err != nil:
		return nil, fmt.Errorf("%w: lock: %v", ErrBadCommand, rd.err)
	case len(rd.b) != 0:
		return nil, fmt.Errorf("%w: lock: trailing bytes", ErrBadCommand)
	}
	return l, nil
}

// Encode appends the waiter's encoding to dst.
func (w *LockWaiter) Encode(dst []byte) []byte {
	dst = append(dst, lockVersion)
	dst = appendBytes(dst, w.Owner)
	dst = binary.AppendVarint(dst, w.TTL)
	return binary.AppendVarint(dst, w.WaitEnd)
}

// DecodeLockWaiter parses an encoded waiter; its slices are its own.
func DecodeLockWaiter(b []byte) (*LockWaiter, error) {
	rd := reader{b: b}
	if v := rd.byte(); v != lockVersion && rd.err == nil {
		return nil, fmt.Errorf("%w: lock waiter version %d", ErrBadCommand, v)
	}
	w := &LockWaiter{Owner: append([]byte(nil), rd.bytes()...)}
	w.TTL = rd.varint()
	w.WaitEnd = rd.varint()
	switch {
	case rd.err != nil:
		return nil, fmt.Errorf("%w: lock waiter: %v", ErrBadCommand, rd.err)
	case len(rd.b) != 0:
		return nil, fmt.Errorf("%w: lock waiter: trailing bytes", ErrBadCommand)
	}
	return w, nil
}
