package resp

import (
	"context"
	"fmt"
	"strconv"

	"github.com/idemgate/idemgate/command"
)

// The keyspace as a whole: KEYS, SCAN and DBSIZE, over this node's
// applied state after the pipeline's barrier; reserved keys are never
// shown. Not inside MULTI (they have no read in the log). FLUSHDB and
// FLUSHALL empty it.

// maxKeysReply bounds what KEYS answers: a pattern that matches more is
// refused rather than answered with a reply of unbounded size.
const maxKeysReply = 100000

func init() {
	register(
		&redisCommand{name: "keys", arity: 2, kind: kindRead, script: true, read: cmdKeys},
		&redisCommand{name: "dbsize", arity: 1, kind: kindRead, flags: []string{"fast"}, read: cmdDBSize},
		&redisCommand{name: "scan", arity: -2, kind: kindRead, read: cmdScan},
		&redisCommand{name: "flushdb", op: command.TypeKVFlush, arity: -1, flags: []string{"write"},
			plan: func(c *conn, a [][]byte) plan { return planFlush(c, a, false) }},
		&redisCommand{name: "flushall", op: command.TypeKVFlush, arity: -1, flags: []string{"write"},
			plan: func(c *conn, a [][]byte) plan { return planFlush(c, a, true) }},
	)
}

// planFlush is FLUSHDB [ASYNC|SYNC] (the connection's keyspace) or
// FLUSHALL (every keyspace): the state machine's flush, one bounded step
// an entry (command.KVFlushCommand), proposed until it is done; OK then.
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
			r := c.s.store.ApplyInOrder(ctx, []*command.Command{command.KVFlushCommand(db, all, bound, from)})[0]
			cancel()
			switch {
			case r.Err != nil:
				w.errorLine(errorReply(r.Err))
				return
			case r.Res.Code != command.CodeOK:
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
	if err == nil && c.script != nil {
		keys, err = c.scriptKeys(ctx, keys)
	}
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

// scriptKeys is KEYS inside a script (python-redis-lock's reset_all): of
// the keys this node holds, those the script sees live (it may have
// deleted some). Each is a read of the script's, so its effects apply
// only while they are as it saw them; a key another client creates
// meanwhile, or one the script itself created, is not listed.
func (c *conn) scriptKeys(ctx context.Context, keys [][]byte) ([][]byte, error) {
	out := keys[:0]
	for _, k := range keys {
		_, ok, err := c.local(ctx, k)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, k)
		}
	}
	return out, nil
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

// cmdScan is SCAN cursor [MATCH pattern] [COUNT n] [TYPE type] over the
// connection's keyspace, in the order of the state machine's scan index
// (the state machine's ScanKV): the cursor is a revision (keys in the order they were
// created), the same on every node and after restarts, and a key present
// for the whole scan is answered once. COUNT bounds the index entries a call looks at (at most
// command.MaxScanLook), so a call may answer fewer keys, or none, and go on.
// TYPE string and TYPE list keep the keys of that type, another type none.
func cmdScan(c *conn, ctx context.Context, a [][]byte) {
	cursor, ok := parseCursor(a[1])
	if !ok {
		c.w.errorLine("ERR invalid cursor")
		return
	}
	count, match, typ := 10, []byte(nil), ""
	for i := 2; i < len(a); i += 2 {
		opt := string(a[i])
		switch {
		case eq(opt, "count") && i+1 < len(a):
			n, ok := parseInt64(a[i+1])
			switch {
			case !ok:
				c.w.errorLine(msgNotInteger)
				return
			case n < 1:
				c.w.errorLine(msgSyntax)
				return
			}
			count = int(min(n, command.MaxScanLook))
		case eq(opt, "match") && i+1 < len(a):
			match = a[i+1]
			if string(match) == "*" {
				match = nil
			}
		case eq(opt, "type") && i+1 < len(a):
			typ = string(a[i+1])
		default:
			c.w.errorLine(msgSyntax)
			return
		}
	}
	var keys [][]byte
	next, err := c.s.store.ScanKV(ctx, c.db, cursor, count, func(k []byte, kind command.Kind) {
		if (typ == "" || eq(typ, kind.Name())) &&
			(match == nil || globMatch(match, k)) {
			keys = append(keys, append([]byte(nil), k...))
		}
	})
	if err != nil {
		c.w.errorLine(errorReply(err))
		return
	}
	c.w.array(2)
	c.w.bulkString(strconv.FormatUint(next, 10))
	c.w.array(len(keys))
	for _, k := range keys {
		c.w.bulk(k)
	}
}

// parseCursor reads SCAN's cursor as Redis 7.0 does (strtoul, base 10): an
// optional sign (a minus negates, modulo 2^64), then digits only; nothing
// at all is 0; leading space, other bytes, or a number past 2^64-1 are
// refused.
func parseCursor(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	neg := false
	switch b[0] {
	case '-':
		neg, b = true, b[1:]
	case '+':
		b = b[1:]
	}
	if len(b) == 0 || b[0] < '0' || b[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}
