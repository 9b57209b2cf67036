package resp

import (
	"context"
	"fmt"
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
	)
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
