package resp

import (
	"context"
	"fmt"

	"github.com/idemgate/idemgate/fsm"
)

// The keyspace as a whole: KEYS and DBSIZE, over this node's applied
// state after the pipeline's barrier, in key order; reserved keys are
// never shown. Not inside MULTI (they have no read in the log).

// maxKeysReply bounds what KEYS answers: a pattern that matches more is
// refused rather than answered with a reply of unbounded size.
const maxKeysReply = 100000

func init() {
	register(
		&command{name: "keys", arity: 2, kind: kindRead, read: cmdKeys},
		&command{name: "dbsize", arity: 1, kind: kindRead, flags: []string{"fast"}, read: cmdDBSize},
		&command{name: "flushdb", arity: -1, kind: kindWrite, flags: []string{"write"}, write: true, admin: true,
			plan: func(c *conn, a [][]byte) plan { return planFlush(c, a, false) }},
		&command{name: "flushall", arity: -1, kind: kindWrite, flags: []string{"write"}, write: true, admin: true,
			plan: func(c *conn, a [][]byte) plan { return planFlush(c, a, true) }},
	)
}

// planFlush is FLUSHDB [ASYNC|SYNC] (the connection's keyspace) or
// FLUSHALL (every keyspace): the state machine's flush, one bounded step
// an entry (fsm.KVFlushCommand), proposed until it is done; OK then.
// ASYNC is SYNC: the reply waits for the flush either way. Only the admin
// role's token may run them. A keyspace of up to 10,000 keys is flushed
// by one entry, at once; a larger one by a series, during which the keys
// not yet reached are still read. Not inside MULTI, nor from a script.
func planFlush(c *conn, a [][]byte, all bool) plan {
	if len(a) > 2 || (len(a) == 2 && !eq(string(a[1]), "async") && !eq(string(a[1]), "sync")) {
		return plan{err: msgSyntax}
	}
	db := c.db
	return plan{direct: func(_ context.Context, w *writer) {
		var (
			bound uint64
			from  []byte
		)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.OpTimeout)
			r := c.s.store.ApplyInOrder(ctx, []*fsm.Command{fsm.KVFlushCommand(db, all, bound, from)})[0]
			cancel()
			switch {
			case r.Err != nil:
				w.errorLine(errorReply(r.Err))
				return
			case r.Res.Code != fsm.CodeOK:
				w.errorLine(errorReply(r.Res.Err()))
				return
			}
			bound, from = r.Res.Version, r.Res.Value
			if len(from) == 0 {
				w.ok()
				return
			}
		}
	}}
}

// cmdKeys is KEYS pattern, matched as Redis matches it (globMatch).
func cmdKeys(c *conn, ctx context.Context, a [][]byte) {
	var keys [][]byte
	all := string(a[1]) == "*"
	err := c.eachKey(ctx, func(k []byte) bool {
		if all || globMatch(a[1], k) {
			keys = append(keys, append([]byte(nil), k...))
		}
		return len(keys) <= maxKeysReply
	})
	switch {
	case err != nil:
		c.w.errorLine(errorReply(err))
	case len(keys) > maxKeysReply:
		c.w.errorLine(fmt.Sprintf("ERR KEYS would answer more than %d keys; use a narrower pattern, or SCAN", maxKeysReply))
	default:
		c.w.array(len(keys))
		for _, k := range keys {
			c.w.bulk(k)
		}
	}
}

// cmdDBSize counts the live keys.
func cmdDBSize(c *conn, ctx context.Context, _ [][]byte) {
	n := 0
	if err := c.eachKey(ctx, func([]byte) bool { n++; return true }); err != nil {
		c.w.errorLine(errorReply(err))
		return
	}
	c.w.integer(int64(n))
}
