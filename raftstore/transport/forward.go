package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemgate/idemgate/command"
)

// Forwarding (frame.go has the protocol): a follower's calls to the leader
// (Client), and the leader's side of the connection (Server).

var errConnLost = errors.New("forwarding connection lost")

// Peer is how to reach one node's Raft port.
type Peer struct {
	// ID is the node's id: errors name it.
	ID string
	// Addr is where to dial.
	Addr string
	// TLS is the client side of mutual TLS (it checks the peer proves
	// ID); nil: plaintext.
	TLS *tls.Config
	// Cluster is the dialler's cluster id, sent in the preamble (zero
	// while it knows none).
	Cluster command.ClusterID
	// Timeout bounds the dial, the handshake and the preamble.
	Timeout time.Duration
}

type fwdCall struct {
	kind    Kind
	seq     uint64
	payload []byte
	done    chan fwdResp
}

type fwdResp struct {
	status  byte
	payload []byte
	err     error
}

// Client is one forwarding connection to a peer: requests are written in
// the order they are sent, many in flight at once.
type Client struct {
	peer     string
	conn     net.Conn
	maxFrame uint32
	errs     *Errors
	calls    chan *fwdCall
	mu       sync.Mutex
	seq      uint64
	inUse    map[uint64]*fwdCall
	dead     chan struct{}
	closed   bool
	traced   atomic.Bool // the peer reads traced applies (Learn)
	scripts  atomic.Bool // the peer runs forwarded scripts (Learn)
}

// DialForward opens a forwarding connection to p; answers are read up to
// maxFrame bytes and their errors mapped by errs.
func DialForward(p Peer, maxFrame uint32, errs *Errors) (*Client, error) {
	conn, err := dialProto(p.Addr, p.Timeout, protoForward, p.Cluster, p.TLS)
	if err != nil {
		return nil, err
	}
	c := &Client{peer: p.ID, conn: conn, maxFrame: maxFrame, errs: errs, calls: make(chan *fwdCall, 1024),
		inUse: make(map[uint64]*fwdCall), dead: make(chan struct{})}
	go c.writeLoop()
	go c.readLoop()
	return c, nil
}

// Alive reports whether the connection still stands.
func (c *Client) Alive() bool {
	select {
	case <-c.dead:
		return false
	default:
		return true
	}
}

// Learn records what the peer's hello says it reads: a peer whose hello
// names FeatureTracedApply gets the trace contexts SendApplyTraced is given,
// any other gets none (an older node would close the connection on their
// kinds). What a hello says holds for the connection's life: a node
// restarted on another version is a new connection, and a new hello.
func (c *Client) Learn(h Hello) {
	c.traced.Store(h.Has(FeatureTracedApply))
	c.scripts.Store(h.Has(FeatureLeaderScript))
}

// RunsScripts reports whether the peer's hello named
// FeatureLeaderScript: a LeaderScript request goes only to one that did
// (an older node answers an unknown kind with an error, having run
// nothing, but a caller could not tell that error from the script's).
func (c *Client) RunsScripts() bool { return c.scripts.Load() }

// Call sends one request and waits for its answer or ctx: an OK answer's
// payload, or the error the peer answered with (as Errors map it).
func (c *Client) Call(ctx context.Context, kind Kind, payload []byte) ([]byte, error) {
	wait, err := c.Send(ctx, kind, payload)
	if err != nil {
		return nil, err
	}
	return wait(ctx)
}

// Send queues one request on the connection without waiting for its
// answer; the returned func waits for it, as Call does. The connection
// writes requests in the order they are sent, and the leader proposes
// them in the order they arrive. A request cut off by a lost connection
// fails with an error wrapping Errors.Retry: its fate is unknown.
func (c *Client) Send(ctx context.Context, kind Kind, payload []byte) (wait func(context.Context) ([]byte, error), err error) {
	return c.SendApplyTraced(ctx, kind, payload, TraceContext{})
}

// SendApplyTraced is Send with the trace context of the caller's span: an
// Apply carries it to a peer that reads it (Learn), where its span of the
// apply is that span's child. A zero tc, another kind or a peer that does
// not read them: Send, byte for byte.
func (c *Client) SendApplyTraced(ctx context.Context, kind Kind, payload []byte, tc TraceContext) (wait func(context.Context) ([]byte, error), err error) {
	if kind == Apply && tc.IsValid() && c.traced.Load() {
		// The trace field ahead of the command, as applyTraced's payload
		// holds it: a traced call's own copy, so that an untraced one
		// costs nothing more.
		kind = applyTraced
		payload = append(appendTrace(make([]byte, 0, 1+traceContextLen+len(payload)), tc), payload...)
	}
	call, err := c.send(ctx, kind, payload)
	if err != nil {
		return nil, c.connErr(err)
	}
	return func(ctx context.Context) ([]byte, error) {
		r, err := c.await(ctx, call)
		if err != nil {
			return nil, c.connErr(err)
		}
		if err := c.errs.err(r.status, r.payload, c.peer); err != nil {
			return nil, err
		}
		return r.payload, nil
	}, nil
}

// connErr marks a lost connection as a retry (the request's fate is
// unknown: it is retried under the same request id).
func (c *Client) connErr(err error) error {
	if errors.Is(err, errConnLost) {
		return fmt.Errorf("%w: %v", c.errs.Retry, err)
	}
	return err
}

func (c *Client) send(ctx context.Context, kind Kind, payload []byte) (*fwdCall, error) {
	call := &fwdCall{kind: kind, payload: payload, done: make(chan fwdResp, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errConnLost
	}
	c.seq++
	call.seq = c.seq
	c.inUse[call.seq] = call
	c.mu.Unlock()
	select {
	case c.calls <- call:
		return call, nil
	case <-c.dead:
		return nil, errConnLost
	case <-ctx.Done():
		c.forget(call.seq)
		return nil, ctx.Err()
	}
}

func (c *Client) await(ctx context.Context, call *fwdCall) (fwdResp, error) {
	select {
	case r := <-call.done:
		return r, r.err
	case <-ctx.Done():
		c.forget(call.seq)
		return fwdResp{}, ctx.Err()
	}
}

func (c *Client) forget(seq uint64) {
	c.mu.Lock()
	delete(c.inUse, seq)
	c.mu.Unlock()
}

// writeLoop writes the calls in the order they were sent. Applies that
// queued together go out as one applyBatch frame (the leader's group
// commit then finds them together too); any other call ends a batch, so
// the order on the wire is the order sent.
//
// Before it flushes an empty queue it yields once: a Send wakes this
// goroutine at once (it runs next on the sender's P), so without the
// yield it would find one call and write it alone, one socket write per
// forwarded call, while the request handlers about to send were still
// runnable behind it. After the yield their calls share the write. The
// leader holds them for its batch in flight anyway, so they lose nothing
// by it.
func (c *Client) writeLoop() {
	bw := bufio.NewWriterSize(c.conn, 64<<10)
	var batch []*fwdCall
	var next *fwdCall // taken from the queue but not part of the batch
	maxBytes := min(int(c.maxFrame)/2, maxForwardBatchBytes)
	yielded := false
	for {
		call := next
		next = nil
		if call == nil {
			select {
			case call = <-c.calls:
			case <-c.dead:
				return
			}
		}
		batch = append(batch[:0], call)
		size := len(call.payload)
	gather:
		for isApply(call.kind) && len(batch) < maxForwardBatch {
			select {
			case more := <-c.calls:
				if !isApply(more.kind) || size+len(more.payload) > maxBytes {
					next = more
					break gather
				}
				batch, size = append(batch, more), size+len(more.payload)
			default:
				break gather
			}
		}
		err := writeCalls(bw, batch)
		if err == nil && next == nil && len(c.calls) == 0 {
			if !yielded {
				yielded = true
				if runtime.Gosched(); len(c.calls) > 0 {
					continue
				}
			}
			err, yielded = bw.Flush(), false
		}
		if err != nil {
			c.fail()
			return
		}
	}
}

// writeCalls writes a batch as writeLoop gathered it: one call in a frame
// of its kind, or applies in a batch frame, a traced one when one of them
// is traced (they are only to a peer that reads them).
func writeCalls(bw *bufio.Writer, batch []*fwdCall) error {
	if call := batch[0]; len(batch) == 1 {
		return writeFrame(bw, byte(call.kind), call.seq, call.payload)
	}
	for _, c := range batch {
		if c.kind == applyTraced {
			return writeFrame(bw, byte(applyBatchTraced), 0, encodeTracedApplyBatch(batch))
		}
	}
	return writeFrame(bw, byte(applyBatch), 0, encodeApplyBatch(batch))
}

// isApply reports whether a call of kind k is an apply, traced or not:
// applies that queue together share a batch frame.
func isApply(k Kind) bool { return k == Apply || k == applyTraced }

func (c *Client) readLoop() {
	br := bufio.NewReaderSize(c.conn, 64<<10)
	for {
		status, seq, payload, err := readFrame(c.conn, br, c.maxFrame)
		if err != nil {
			c.fail()
			return
		}
		c.mu.Lock()
		call := c.inUse[seq]
		delete(c.inUse, seq)
		c.mu.Unlock()
		if call != nil {
			call.done <- fwdResp{status: status, payload: payload}
		}
	}
}

// fail closes the connection and fails every call in flight: their fate is
// unknown, and their callers retry with the same request id.
func (c *Client) fail() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.dead)
	pending := c.inUse
	c.inUse = nil
	c.mu.Unlock()
	c.conn.Close()
	for _, call := range pending {
		call.done <- fwdResp{err: errConnLost}
	}
}

// Close closes the connection; the calls in flight fail as on a lost one.
func (c *Client) Close() { c.fail() }

// answeredAtOnce are the kinds answered as soon as their answer is
// ready, not after the answers of the requests before them: a read of
// the leader's state, which an apply queued ahead of it (waiting for its
// commit, the length of a log write on two nodes) would otherwise hold
// back, and the grants feed's call, which the leader holds until it has
// grants to tell and which would otherwise hold back every write behind
// it. The client pairs answers with requests by seq; only requests are
// kept in order.
// A forwarded script too: it runs as long as a script does, and the
// applies queued behind it are no business of its.
func answeredAtOnce(k Kind) bool { return k == LeaderKV || k == Grants || k == LeaderScript }

// Handler is what a forwarded request does on the node that answers it.
type Handler interface {
	// Handle starts one request and returns its answer to come. Handle
	// is called in the order the requests arrive and must not wait for
	// the request's outcome (an apply is handed to Raft at once, so a
	// connection's requests are batched together there); the waits are
	// called in the same order, one at a time, but those of the kinds
	// answeredAtOnce, each on a goroutine of its own.
	Handle(kind Kind, payload []byte) Pending
}

// TracedHandler is a Handler that takes the trace context a follower sent
// with an apply: its span of the apply is a child of the follower's. A
// Server whose Handler is not one handles traced applies as untraced ones.
type TracedHandler interface {
	Handler
	// HandleApply is Handle(Apply, cmd) for an apply sent with tc (a
	// valid one; applies without one go to Handle).
	HandleApply(cmd []byte, tc TraceContext) Pending
}

// Pending is a request's answer to come: Wait returns an OK answer's
// payload, or the error to answer with (Errors say how it travels).
// Ready, when not nil, is closed once Wait will not block: the writer
// sends the answers it holds before it waits for one that is not ready,
// and lets the ready ones that follow share its write.
type Pending struct {
	Wait  func() ([]byte, error)
	Ready <-chan struct{}
}

// Answer is a Pending that says nothing of when f returns (no Ready): the
// writer sends the answers it holds before it calls f.
func Answer(f func() ([]byte, error)) Pending { return Pending{Wait: f} }

// ready reports whether Wait returns at once (never, without Ready: a nil
// channel is never ready).
func (p Pending) ready() bool {
	select {
	case <-p.Ready:
		return true
	default:
		return false
	}
}

// Server is the leader's side of forwarding connections.
type Server struct {
	Handler Handler
	// MaxFrame bounds a request frame: the largest command, and room for
	// the rest (FrameOverhead).
	MaxFrame uint32
	Errors   *Errors
	Logger   *slog.Logger

	batches atomic.Int64 // apply-batch frames received
	frames  atomic.Int64 // frames received, of every kind
	traced  atomic.Int64 // frames of a traced kind received
}

// handleApply hands one apply to the Handler, with its trace context when
// it came with a valid one and the Handler takes it.
func (s *Server) handleApply(cmd []byte, tc TraceContext) Pending {
	if th, ok := s.Handler.(TracedHandler); ok && tc.IsValid() {
		return th.HandleApply(cmd, tc)
	}
	return s.Handler.Handle(Apply, cmd)
}

// Serve answers the requests of one forwarding connection (past its
// preamble) until it ends, and closes it.
func (s *Server) Serve(conn net.Conn) {
	defer conn.Close()
	type answer struct {
		seq uint64
		p   Pending
	}
	answers := make(chan answer, 1024)
	writerDone := make(chan struct{})
	// The writer answers in the order the requests came, and the reads
	// that skip the queue (answeredAtOnce) write beside it: wmu keeps
	// their frames whole.
	var (
		wmu    sync.Mutex
		bw     = bufio.NewWriterSize(conn, 64<<10)
		broken bool
	)
	flushLocked := func() { // under wmu
		if !broken && bw.Buffered() > 0 {
			if err := bw.Flush(); err != nil {
				broken = true
				conn.Close()
			}
		}
	}
	write := func(a answer, flush bool) {
		status, payload := statusOK, []byte(nil)
		if p, err := a.p.Wait(); err != nil {
			status, payload = s.Errors.answer(err)
		} else {
			payload = p
		}
		wmu.Lock()
		defer wmu.Unlock()
		if broken {
			return // drain so the reader never blocks
		}
		writeFrame(bw, status, a.seq, payload)
		if flush {
			flushLocked()
		}
	}
	var atOnce sync.WaitGroup
	slots := make(chan struct{}, cap(answers))
	go func() {
		defer close(writerDone)
		for a := range answers {
			// An answer not ready yet may be a commit away (the next
			// batch's, queued behind the one just answered): what is
			// buffered goes out before the wait, not after it.
			if !a.p.ready() {
				wmu.Lock()
				flushLocked()
				wmu.Unlock()
			}
			write(a, len(answers) == 0)
		}
		wmu.Lock()
		bw.Flush()
		wmu.Unlock()
	}()
	defer func() {
		atOnce.Wait()
		close(answers)
		<-writerDone
	}()

	br := bufio.NewReaderSize(conn, 64<<10)
	for {
		kind, seq, payload, err := readFrame(conn, br, s.MaxFrame)
		if errors.Is(err, errFrameTooLarge) {
			s.Logger.Warn("forwarding: closing the connection", "error", err, "peer", conn.RemoteAddr())
		}
		if err != nil {
			return
		}
		s.frames.Add(1)
		if answeredAtOnce(Kind(kind)) {
			slots <- struct{}{} // as many as the queue holds: a peer that sends more waits, as it does for applies
			a := answer{seq: seq, p: s.Handler.Handle(Kind(kind), payload)}
			atOnce.Add(1)
			go func() {
				defer func() { <-slots; atOnce.Done() }()
				write(a, true)
			}()
			continue
		}
		switch Kind(kind) {
		case applyBatch:
			// Many applies in one frame: each answered under its own seq.
			s.batches.Add(1)
			err = decodeApplyBatch(payload, func(seq uint64, cmd []byte) {
				answers <- answer{seq: seq, p: s.Handler.Handle(Apply, cmd)}
			})
		case applyTraced:
			s.traced.Add(1)
			var tc TraceContext
			if tc, payload, err = readTrace(payload); err == nil {
				answers <- answer{seq: seq, p: s.handleApply(payload, tc)}
			}
		case applyBatchTraced:
			s.batches.Add(1)
			s.traced.Add(1)
			err = decodeTracedApplyBatch(payload, func(seq uint64, cmd []byte, tc TraceContext) {
				answers <- answer{seq: seq, p: s.handleApply(cmd, tc)}
			})
		default:
			answers <- answer{seq: seq, p: s.Handler.Handle(Kind(kind), payload)}
		}
		if err != nil {
			s.Logger.Warn("forwarding: closing the connection", "error", err, "peer", conn.RemoteAddr())
			return
		}
	}
}
