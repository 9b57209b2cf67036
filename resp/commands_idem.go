package resp

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/once"
	"github.com/idemgate/idemgate/tokens"
)

// idemgate's own verbs: form tokens, the pair Redis code builds from SET
// NX and GETDEL, in one command each; once claims (package once), as the
// HTTP API has them.
//
//	IDEM.TOKEN scope [ttl-seconds]             -> the token (bulk)
//	IDEM.CONSUME scope token                   -> :1 the first time, :0 after
//	IDEM.BEGIN scope key lease-ms [payload]    -> [state, fence, result]: begun
//	                                              (yours), completed (the result),
//	                                              in-progress (result nil)
//	IDEM.RENEW scope key fence lease-ms        -> :the lease's end (unix ms)
//	IDEM.COMPLETE scope key fence result       -> +OK
//	IDEM.RELEASE scope key fence               -> +OK
//
// A lost claim is -STALEFENCE, another payload -KEYREUSE.
func init() {
	register(
		&redisCommand{name: "idem.token", op: command.TypeTokenIssue, arity: -2, plan: planIdemToken},
		&redisCommand{name: "idem.consume", op: command.TypeTokenConsume, arity: 3, plan: planIdemConsume},
		&redisCommand{name: "idem.begin", op: command.TypeOnceBegin, arity: -4, plan: planIdemBegin},
		&redisCommand{name: "idem.renew", op: command.TypeOnceRenew, arity: 5, plan: planIdemRenew},
		&redisCommand{name: "idem.complete", op: command.TypeOnceComplete, arity: 5, plan: planIdemComplete},
		&redisCommand{name: "idem.release", op: command.TypeOnceRelease, arity: 4, plan: planIdemRelease},
	)
}

// The once replies of their own, as Redis names its (WRONGTYPE ...).
const (
	msgStaleFence = "STALEFENCE "
	msgKeyReuse   = "KEYREUSE the key's claim was begun with another payload"
	msgBadLease   = "ERR invalid lease: want milliseconds, 1 to 86400000"
	msgBadFence   = "ERR invalid fence: want the fence a begin answered, 1 or more"
)

// onceArgs checks a once call's key (the HTTP API's rule) and parses its
// lease (milliseconds) or fence at a[i]; "" when they pass.
func onceKey(a [][]byte) string {
	if _, err := httpx.CheckKey(a[2]); err != nil {
		return "ERR invalid key: " + err.Error()
	}
	return ""
}

func parseLease(b []byte) (time.Duration, bool) {
	n, ok := parseInt64(b)
	if !ok || n <= 0 || n > int64(once.MaxLease/time.Millisecond) {
		return 0, false
	}
	return time.Duration(n) * time.Millisecond, true
}

func parseFence(b []byte) (uint64, bool) {
	n, err := strconv.ParseUint(string(b), 10, 64)
	return n, err == nil && n > 0
}

// onceError is the reply for a once call's error.
func onceError(err error) string {
	switch {
	case errors.Is(err, once.ErrStaleFence):
		return msgStaleFence + err.Error()
	case errors.Is(err, once.ErrKeyReuse):
		return msgKeyReuse
	}
	return errorReply(err)
}

func planIdemBegin(c *conn, a [][]byte) plan {
	if len(a) > 5 {
		return plan{err: msgSyntax}
	}
	if msg := onceKey(a); msg != "" {
		return plan{err: msg}
	}
	lease, ok := parseLease(a[3])
	if !ok {
		return plan{err: msgBadLease}
	}
	scope, key := string(a[1]), string(a[2])
	var payload []byte
	if len(a) == 5 {
		payload = a[4]
	}
	return plan{direct: func(ctx context.Context, w *writer) {
		out, err := c.s.once.Begin(ctx, scope, key, payload, lease)
		if err != nil {
			w.errorLine(onceError(err))
			return
		}
		w.array(3)
		switch out.State {
		case command.ClaimBegun:
			w.bulkString("begun")
			w.integer(int64(out.Fence))
			w.null()
		case command.ClaimCompleted:
			w.bulkString("completed")
			w.integer(int64(out.Fence))
			w.bulk(out.Result)
		default:
			w.bulkString("in-progress")
			w.integer(int64(out.Fence))
			w.null()
		}
	}}
}

func planIdemRenew(c *conn, a [][]byte) plan {
	if msg := onceKey(a); msg != "" {
		return plan{err: msg}
	}
	fence, ok := parseFence(a[3])
	if !ok {
		return plan{err: msgBadFence}
	}
	lease, ok := parseLease(a[4])
	if !ok {
		return plan{err: msgBadLease}
	}
	scope, key := string(a[1]), string(a[2])
	return plan{direct: func(ctx context.Context, w *writer) {
		end, err := c.s.once.Renew(ctx, scope, key, fence, lease)
		if err != nil {
			w.errorLine(onceError(err))
			return
		}
		w.integer(end.UnixMilli())
	}}
}

func planIdemComplete(c *conn, a [][]byte) plan {
	return planFenced(c, a, func(ctx context.Context, scope, key string, fence uint64) error {
		return c.s.once.Complete(ctx, scope, key, fence, a[4])
	})
}

func planIdemRelease(c *conn, a [][]byte) plan {
	return planFenced(c, a, func(ctx context.Context, scope, key string, fence uint64) error {
		return c.s.once.Release(ctx, scope, key, fence)
	})
}

// planFenced plans a holder's call answered +OK: complete, release.
func planFenced(c *conn, a [][]byte, call func(ctx context.Context, scope, key string, fence uint64) error) plan {
	if msg := onceKey(a); msg != "" {
		return plan{err: msg}
	}
	fence, ok := parseFence(a[3])
	if !ok {
		return plan{err: msgBadFence}
	}
	scope, key := string(a[1]), string(a[2])
	return plan{direct: func(ctx context.Context, w *writer) {
		if err := call(ctx, scope, key, fence); err != nil {
			w.errorLine(onceError(err))
			return
		}
		w.ok()
	}}
}

func planIdemToken(c *conn, a [][]byte) plan {
	if len(a) > 3 {
		return plan{err: msgSyntax}
	}
	var ttl time.Duration
	if len(a) == 3 {
		n, ok := parseInt64(a[2])
		if !ok || n <= 0 || n > int64(tokens.MaxTTL/time.Second) {
			return plan{err: "ERR invalid ttl: " + tokens.ErrBadTTL.Error()}
		}
		ttl = time.Duration(n) * time.Second
	}
	scope := string(a[1])
	return plan{direct: func(ctx context.Context, w *writer) {
		tok, err := c.s.tok.Issue(ctx, scope, ttl)
		if err != nil {
			w.errorLine(errorReply(err))
			return
		}
		w.bulkString(tok.Value)
	}}
}

func planIdemConsume(c *conn, a [][]byte) plan {
	scope, token := string(a[1]), string(a[2])
	return plan{direct: func(ctx context.Context, w *writer) {
		err := c.s.tok.Consume(ctx, scope, token)
		switch {
		case err == nil:
			w.integer(1)
		case errors.Is(err, tokens.ErrUsed):
			w.integer(0)
		default:
			w.errorLine(errorReply(err))
		}
	}}
}
