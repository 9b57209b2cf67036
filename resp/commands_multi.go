package resp

import "strings"

// MULTI without transactions. idemgate does not run transactions yet, but
// a client that sends MULTI means the commands behind it to be applied
// together at EXEC or not at all. Run one by one, they would be applied
// while the client is told the transaction failed, and a client that then
// retries applies them twice. So a MULTI opens a transaction that can only
// be discarded: every command until EXEC or DISCARD is answered with an
// error and not run (as Redis answers a command that cannot be queued),
// and EXEC answers EXECABORT, Redis's reply to a transaction with such
// errors. Nothing between MULTI and EXEC is ever applied.
//
// MULTI itself answers +OK, as Redis does: a client reads its reply, each
// command's and EXEC's in order whatever MULTI answered, only if MULTI
// succeeded. go-redis's TxPipelined stops reading at a MULTI error and can
// hand the connection back to its pool with EXEC's reply unread, so the
// next command would read the wrong reply; after +OK it reads every
// reply, and reports EXECABORT for each command. redis-py's pipeline
// raises the first command's error once EXEC answers EXECABORT, and
// ioredis's multi() rejects with EXEC's error (the others in
// previousErrors): each reports failure, none applies anything.
const (
	msgNotQueued   = "ERR not queued and not run: MULTI/EXEC transactions are not supported by idemgate, so EXEC will discard this one; use SET NX, SET ... GET, GETDEL, INCR or IDEM.CONSUME for atomic steps"
	msgExecAbort   = "EXECABORT Transaction discarded because of previous errors."
	msgNestedMulti = "ERR MULTI calls can not be nested"
	msgWatchInside = "ERR WATCH inside MULTI is not allowed"
)

// multiState is an open MULTI's.
type multiState struct {
	refused int // commands answered with an error since MULTI
}

func init() {
	flags := []string{"noscript", "loading", "stale", "fast", "allow_busy"}
	register(
		&command{name: "multi", arity: 1, kind: kindConn, flags: flags,
			conn: func(c *conn, _ [][]byte) { c.multi = &multiState{}; c.w.ok() }},
		&command{name: "exec", arity: 1, kind: kindConn, flags: flags,
			conn: func(c *conn, _ [][]byte) { c.w.errorLine("ERR EXEC without MULTI") }},
		&command{name: "discard", arity: 1, kind: kindConn, flags: flags,
			conn: func(c *conn, _ [][]byte) { c.w.errorLine("ERR DISCARD without MULTI") }},
	)
}

// inMulti answers a request made while a MULTI is open. Nothing it asks
// for is run: EXEC and DISCARD end the transaction, QUIT the connection;
// the rest are refused, as Redis refuses what it cannot queue (a nested
// MULTI and a WATCH are refused without spoiling an empty transaction,
// as in Redis; an EXEC that cannot run ends it with Redis's EXECABORT).
func (c *conn) inMulti(r request) {
	errs := c.w.errors
	cmd, refusal := c.check(r.args)
	name := c.lastCmd
	switch {
	case name == "exec":
		switch {
		case refusal != "":
			c.w.errorLine("EXECABORT Transaction discarded because of: " + strings.TrimPrefix(refusal, "ERR "))
		case c.multi.refused == 0:
			c.w.array(0) // an empty transaction: nothing to apply
		default:
			c.w.errorLine(msgExecAbort)
		}
		c.multi = nil
	case refusal == "" && name == "discard":
		c.w.ok()
		c.multi = nil
	case refusal == "" && name == "quit":
		cmd.conn(c, r.args)
	case refusal == "" && name == "multi":
		c.w.errorLine(msgNestedMulti)
	case name == "watch":
		c.w.errorLine(msgWatchInside)
	default:
		if refusal == "" {
			refusal = msgNotQueued
		}
		c.w.errorLine(refusal)
		c.multi.refused++
	}
	c.done(r, name, c.w.errors != errs)
}
