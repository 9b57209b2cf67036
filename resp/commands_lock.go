package resp

import (
	"context"
	"errors"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/locks"
)

// Fair locks (package locks), as the HTTP API has them:
//
//	IDEM.LOCK name ttl-ms [wait-ms]    -> [fence, lease end (unix ms)]; waits
//	                                      FIFO up to wait-ms, then -LOCKED
//	IDEM.RENEWLOCK name fence ttl-ms   -> :the lease's end (unix ms)
//	IDEM.UNLOCK name fence             -> +OK
//
// A lost lock is -STALEFENCE. A client that closes its connection while
// IDEM.LOCK waits leaves the queue.
func init() {
	register(
		&redisCommand{name: "idem.lock", op: command.TypeLockAcquire, arity: -3, plan: planIdemLock},
		&redisCommand{name: "idem.renewlock", op: command.TypeLockRenew, arity: 4, plan: planIdemRenewLock},
		&redisCommand{name: "idem.unlock", op: command.TypeLockRelease, arity: 3, plan: planIdemUnlock},
	)
}

const (
	msgLocked      = "LOCKED another holds the lock"
	msgBadLockTTL  = "ERR invalid ttl: want milliseconds, 1 to 86400000"
	msgBadLockWait = "ERR invalid wait: want milliseconds, 0 to 300000"
	msgNoLocks     = "ERR locks are not served on this listener"
)

func lockName(a [][]byte) string {
	if err := locks.CheckName(string(a[1])); err != nil {
		return "ERR invalid lock name: " + err.Error()
	}
	return ""
}

func parseMillis(b []byte, lo, hi time.Duration) (time.Duration, bool) {
	n, ok := parseInt64(b)
	if !ok || n < int64(lo/time.Millisecond) || n > int64(hi/time.Millisecond) {
		return 0, false
	}
	return time.Duration(n) * time.Millisecond, true
}

// lockError is the reply for a lock call's error.
func lockError(err error) string {
	switch {
	case errors.Is(err, locks.ErrLocked):
		return msgLocked
	case errors.Is(err, locks.ErrStaleFence):
		return msgStaleFence + err.Error()
	case errors.Is(err, locks.ErrQueueFull):
		return "BUSY " + err.Error()
	}
	return errorReply(err)
}

func planIdemLock(c *conn, a [][]byte) plan {
	if len(a) > 4 {
		return plan{err: msgSyntax}
	}
	if c.s.locks == nil {
		return plan{err: msgNoLocks}
	}
	if msg := lockName(a); msg != "" {
		return plan{err: msg}
	}
	ttl, ok := parseMillis(a[2], time.Millisecond, locks.MaxTTL)
	if !ok {
		return plan{err: msgBadLockTTL}
	}
	var wait time.Duration
	if len(a) == 4 {
		if wait, ok = parseMillis(a[3], 0, locks.MaxWait); !ok {
			return plan{err: msgBadLockWait}
		}
	}
	name := string(a[1])
	return plan{direct: func(_ context.Context, w *writer) {
		// The wait, and the store's time to answer after it; a client
		// that goes away ends it, and its place in the queue with it.
		ctx, cancel := context.WithTimeout(context.Background(), wait+c.s.cfg.OpTimeout)
		defer cancel()
		if wait > 0 {
			stop := httpx.WatchClose(c.nc, cancel)
			defer stop()
		}
		held, err := c.s.locks.Acquire(ctx, name, ttl, wait)
		if err != nil {
			w.errorLine(lockError(err))
			return
		}
		w.array(2)
		w.integer(int64(held.Fence))
		w.integer(held.ExpiresAt.UnixMilli())
	}}
}

// holderArgs checks a holder's call (RENEWLOCK, UNLOCK): the name and the
// fence; msg is the refusal, "" when they pass.
func holderArgs(c *conn, a [][]byte) (name string, fence uint64, msg string) {
	if c.s.locks == nil {
		return "", 0, msgNoLocks
	}
	if msg := lockName(a); msg != "" {
		return "", 0, msg
	}
	fence, ok := parseFence(a[2])
	if !ok {
		return "", 0, msgBadFence
	}
	return string(a[1]), fence, ""
}

func planIdemRenewLock(c *conn, a [][]byte) plan {
	name, fence, msg := holderArgs(c, a)
	if msg != "" {
		return plan{err: msg}
	}
	ttl, ok := parseMillis(a[3], time.Millisecond, locks.MaxTTL)
	if !ok {
		return plan{err: msgBadLockTTL}
	}
	return plan{direct: func(ctx context.Context, w *writer) {
		end, err := c.s.locks.Renew(ctx, name, fence, ttl)
		if err != nil {
			w.errorLine(lockError(err))
			return
		}
		w.integer(end.UnixMilli())
	}}
}

func planIdemUnlock(c *conn, a [][]byte) plan {
	name, fence, msg := holderArgs(c, a)
	if msg != "" {
		return plan{err: msg}
	}
	return plan{direct: func(ctx context.Context, w *writer) {
		if err := c.s.locks.Release(ctx, name, fence); err != nil {
			w.errorLine(lockError(err))
			return
		}
		w.ok()
	}}
}
