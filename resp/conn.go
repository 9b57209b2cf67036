package resp

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// conn is one client connection and its state. One goroutine owns it: it
// reads what the client pipelined, runs it (pipeline.go) and writes the
// replies in order.
type conn struct {
	s       *Server
	nc      net.Conn
	ip      string
	id      int64
	created time.Time
	r       reader
	w       writer
	out     *deadlineWriter // under w: the socket, and how far the client has read

	proto int // 2 or 3 (HELLO)
	// names are CLIENT SETNAME's and SETINFO's (connNames), which CLIENT
	// LIST reads from another connection's goroutine.
	names    atomic.Pointer[connNames]
	readonly bool      // READONLY: reads are this node's applied state, not linearized
	reply    replyMode // CLIENT REPLY (reply_mode.go)
	db       int       // SELECT: the keyspace (keyspace.go)
	// sess is what AUTH granted (nil before); revoked is set when a
	// reload took it away (auth.go). Both are read by SetAuth's goroutine.
	sess    atomic.Pointer[session]
	revoked atomic.Bool
	// refused counts the requests refused before authentication: the
	// connection is closed at preAuthRefusals.
	refused int
	quit    bool // QUIT: close once the replies so far are written
	// linger: the client may still be sending what was refused; the
	// close reads and drops it for a while (budget.go's lingerClose).
	linger  bool
	lastCmd string
	multi   *multiState // an open MULTI (commands_multi.go): nothing runs until EXEC or DISCARD
	watches watched     // the keys WATCH saw, until EXEC, DISCARD or UNWATCH
	// script is set on the connection a running script's commands run on
	// (script_call.go): they read and write its sandbox, at its clock.
	script *scriptCall
	// forwarded: the connection a follower's script runs on, here, the
	// leader (script_leader.go): it never hands it on again.
	forwarded *forwardedRun
	// track is CLIENT TRACKING's state (tracking.go); push the
	// invalidations waiting to be written to this connection; wmu orders
	// their writes after the replies: the connection's goroutine holds it
	// from running a batch until its replies are flushed.
	track       tracking
	trackBroken atomic.Bool // the redirection's connection was gone when an invalidation was due
	push        pushSink
	wmu         sync.Mutex
	// acct is what this connection's requests and replies hold against
	// the listener's budget (budget.go).
	acct account
	// replyHeld is what of acct the request being answered holds for
	// its reply (budget.go's hold), given back when it is answered.
	replyHeld int64
	// subs are its Pub/Sub subscriptions (pubsub.go): its goroutine
	// changes them under wmu, its pusher reads them under wmu.
	subs subscriptions
}

// connNames are what CLIENT SETNAME (or HELLO's SETNAME) and CLIENT
// SETINFO set; the connection's goroutine replaces them whole.
type connNames struct{ name, libName, libVer string }

// named is the connection's names (none set: empty).
func (c *conn) named() connNames {
	if n := c.names.Load(); n != nil {
		return *n
	}
	return connNames{}
}

// rename sets the connection's names to what f makes of them.
func (c *conn) rename(f func(*connNames)) {
	n := c.named()
	f(&n)
	c.names.Store(&n)
}

// now is the time a command runs at: the script's clock inside a script,
// so that its TTLs, TIME and absolute expiries agree with the writes the
// state machine applies at that clock.
func (c *conn) now() time.Time {
	if c.script != nil {
		return c.script.now
	}
	return time.Now()
}

// request is one command as read.
type request struct {
	args  [][]byte
	start time.Time
}

// preAuthRefusals is how many refused requests (NOAUTH, WRONGPASS, any
// error) a connection that has not authenticated gets answered before it
// is closed: enough for a client library's connection set-up (go-redis
// sends HELLO and two CLIENT SETINFO before the first command) to leave
// its first command's NOAUTH to the caller, too few to make an
// unauthenticated connection worth keeping.
const preAuthRefusals = 5

func (c *conn) serve() {
	for !c.quit {
		batch, perr := c.readBatch()
		c.wmu.Lock()
		if len(batch) > 0 {
			// Messages delivered before the batch is run come before
			// its replies, as from Redis (pubsub.go); its pusher
			// writes any that come after.
			if c.subs.any() {
				c.writeMessages(c.push.takeMessages())
			}
			errs, pre := c.w.errors, c.preAuth()
			c.run(batch)
			if pre && c.w.errors != errs && c.preAuth() {
				if c.refused++; c.refused >= preAuthRefusals {
					c.quit = true
				}
			}
		}
		if perr != nil {
			var pe *ProtocolError
			switch {
			case errors.As(perr, &pe):
				// Redis answers a malformed frame and closes.
				c.w.errorLine("ERR " + pe.Error())
				c.s.m.observe("protocol", true, time.Now())
				c.linger = true
			case errors.Is(perr, errBudget):
				c.w.errorLine(msgBudget)
				c.overBudget()
			}
			c.quit = true
		}
		err := c.flush()
		c.wmu.Unlock()
		// The batch is answered: what it held is given back, but for a
		// transaction's queued arguments, held until EXEC or DISCARD.
		c.acct.keep(c.queuedBytes())
		if err != nil {
			return
		}
	}
	if c.linger {
		c.lingerClose()
	}
}

// queuedBytes is what an open MULTI holds: its queued arguments.
func (c *conn) queuedBytes() int64 {
	if c.multi == nil {
		return 0
	}
	return c.multi.held
}

// preAuth: tokens are configured and this connection has not
// authenticated; it reads one request at a time, under the pre-AUTH limits
// (reader.go), so an AUTH changes the limits of the request after it.
func (c *conn) preAuth() bool { return c.sess.Load() == nil && c.s.authFunc() != nil }

// flush writes the buffered replies (each write to the socket under
// WriteTimeout: writer.go's deadlineWriter). Its error is also that of a
// write made before it: a reply larger than the buffer goes to the socket
// at once, and when that write failed nothing is buffered, but the writer
// keeps the error, and every later reply is dropped: the connection must
// end. (Skipping Flush when nothing was buffered kept such a connection
// open, answering nothing, until its idle timeout.)
func (c *conn) flush() error { return c.w.bw.Flush() }

// readBatch waits (up to the idle timeout) for a request, then takes the
// ones already buffered behind it, up to MaxPipeline commands and
// MaxPipelineBytes: what the client pipelined. Its error (after the
// requests read before it) ends the connection.
func (c *conn) readBatch() ([]request, error) {
	var batch []request
	size := 0
	for len(batch) < c.s.cfg.MaxPipeline && size < c.s.cfg.MaxPipelineBytes {
		c.r.lim.preAuth = c.preAuth()
		if len(batch) > 0 && (c.r.br.Buffered() == 0 || c.r.lim.preAuth) {
			break
		}
		// A subscriber waits for messages, not requests: as in Redis,
		// the idle timeout does not close it.
		if len(batch) == 0 && c.s.cfg.IdleTimeout > 0 && !c.subs.any() {
			c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		} else if len(batch) == 0 {
			c.nc.SetReadDeadline(time.Time{})
		}
		if _, err := c.r.br.Peek(1); err != nil {
			return batch, err
		}
		// The request has begun: the rest of it must come soon.
		c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.ReadTimeout))
		args, err := c.r.readRequest()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return batch, err
		}
		if len(args) == 0 {
			continue // an empty line or *0: Redis ignores it
		}
		for _, a := range args {
			size += len(a)
		}
		batch = append(batch, request{args: args, start: time.Now()})
	}
	return batch, nil
}
