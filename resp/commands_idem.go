package resp

import (
	"context"
	"errors"
	"time"

	"github.com/idemgate/idemgate/tokens"
)

// idemgate's own verbs: form tokens, the pair Redis code builds from SET
// NX and GETDEL, in one command each.
//
//	IDEM.TOKEN scope [ttl-seconds]   -> the token (bulk)
//	IDEM.CONSUME scope token         -> :1 the first time, :0 after
func init() {
	register(
		&command{name: "idem.token", arity: -2, kind: kindWrite, write: true, plan: planIdemToken},
		&command{name: "idem.consume", arity: 3, kind: kindWrite, write: true, plan: planIdemConsume},
	)
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
