package resp

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// The client buffer budget. Every byte the listener holds for a client
// beyond its connection's fixed buffers is counted before it is held and
// given back once it is not: a request's arguments from their read until
// the request is answered (reader.go, conn.go), a transaction's queued
// arguments until EXEC or DISCARD (commands_multi.go), the values a read
// fetched until its reply is written (commands_kv.go's localStored), the
// invalidations waiting for a tracking connection (tracking.go's
// pushSink). Without one, 137 connections each queuing MULTI + 2 × 4 MiB
// made a node hold 1.1 GiB, and connections times the per-connection
// limits is no bound worth the name (the HTTP listeners' body budget,
// internal/httpx/body.go, is the same lesson).
//
// A connection's first connAllowance bytes are its own, outside the
// budget, as its read and write buffers are: a client of ordinary
// requests (a few KiB at a time) is never refused because others hold the
// budget. A connection that asks for more than the budget has left is
// answered msgBudget and closed, as Redis closes a client past
// maxmemory-clients (Redis picks the largest client; here the one asking
// is closed, which is the one growing). Its bytes are given back as it
// ends. Tracking invalidations that do not fit are not refused: they
// become one "invalidate everything", which costs the client a refetch,
// not a stale cache.

// connAllowance is what a connection's requests and replies may hold
// outside the budget: an inline request's longest line.
const connAllowance = 64 << 10

// sliceOverhead is what one held argument or key costs beside its bytes:
// its slice header and its allocation's rounding up, charged with it, so
// that 64k one-byte arguments are not counted as 64 KiB.
const sliceOverhead = 32

// pushAllowance is what a connection's waiting invalidations may hold
// outside the budget: a few hundred keys.
const pushAllowance = 16 << 10

const msgBudget = "ERR max client buffer reached: this node holds as many bytes for its clients as it may (limits.max_client_buffer); closing the connection"

// errBudget is a charge the budget could not give: the connection is
// answered msgBudget and closed.
var errBudget = errors.New(msgBudget[len("ERR "):])

// budget is the listener's count of the bytes it holds for its clients,
// all connections together.
type budget struct {
	used atomic.Int64
	max  int64
}

// take counts n more bytes, or nothing and false when they do not fit.
func (b *budget) take(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

func (b *budget) give(n int64) { b.used.Add(-n) }

// account is what one holder (a connection's requests and replies, or its
// waiting invalidations) holds: its allowance first, the budget for the
// rest. One goroutine, or one lock, owns it.
type account struct {
	b     *budget
	allow int64
	n     int64
}

// charge counts n more bytes held; false (nothing counted) when the budget
// cannot give what passes the allowance.
func (a *account) charge(n int) bool {
	over := max(a.n+int64(n)-a.allow, 0) - max(a.n-a.allow, 0)
	if over > 0 && !a.b.take(over) {
		return false
	}
	a.n += int64(n)
	return true
}

// release gives back n bytes (at most what is held).
func (a *account) release(n int64) {
	n = min(n, a.n)
	back := max(a.n-a.allow, 0) - max(a.n-n-a.allow, 0)
	a.n -= n
	if back > 0 {
		a.b.give(back)
	}
}

// keep gives back all but n bytes.
func (a *account) keep(n int64) { a.release(a.n - n) }

// hold charges n bytes a reply needs (values read, a transaction's
// results) to c's account until the request is answered (done gives them
// back: the reply is then in the write buffer or written); errBudget when
// the budget cannot give them, and the connection is then closed once its
// replies so far are written.
func (c *conn) hold(n int) error {
	if c.acct.charge(n) {
		c.replyHeld += int64(n)
		return nil
	}
	c.overBudget()
	return errBudget
}

// overBudget marks c to be closed for the budget (once).
func (c *conn) overBudget() {
	if !c.quit {
		c.s.m.budgetClosed.Inc()
	}
	c.quit, c.linger = true, true
}

// lingerClose ends a connection refused while the client may still be
// sending (a request over the cap or the budget): closing a socket that
// holds unread bytes resets it, and a reset can throw away the answer
// before the client reads it. So the write half is shut (the client reads
// the answer, then end of stream) and what still comes is dropped, for at
// most lingerTime and lingerBytes, as the HTTP listeners do.
func (c *conn) lingerClose() {
	nc := c.nc
	if u, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = u.NetConn()
	}
	cw, ok := nc.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	c.nc.SetReadDeadline(time.Now().Add(lingerTime))
	io.CopyN(io.Discard, c.nc, lingerBytes)
}

const (
	lingerTime  = 2 * time.Second
	lingerBytes = 64 << 20
)
