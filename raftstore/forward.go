package raftstore

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/idemgate/idemgate/fsm"
)

// Forwarding (frame.go has the protocol): a follower's calls to the leader,
// and the leader's side of the connection.

var errConnLost = errors.New("forwarding connection lost")

type fwdCall struct {
	kind    byte
	seq     uint64
	payload []byte
	done    chan fwdResp
}

type fwdResp struct {
	status  byte
	payload []byte
	err     error
}

// fwdClient is one connection to a leader.
type fwdClient struct {
	conn     net.Conn
	maxFrame uint32
	calls    chan *fwdCall
	mu       sync.Mutex
	seq      uint64
	inUse    map[uint64]*fwdCall
	dead     chan struct{}
	closed   bool
}

func dialForward(addr string, timeout time.Duration, cluster fsm.ClusterID, tlsCfg *tls.Config, maxFrame uint32) (*fwdClient, error) {
	conn, err := dialProto(addr, timeout, protoForward, cluster, tlsCfg)
	if err != nil {
		return nil, err
	}
	c := &fwdClient{conn: conn, maxFrame: maxFrame, calls: make(chan *fwdCall, 1024),
		inUse: make(map[uint64]*fwdCall), dead: make(chan struct{})}
	go c.writeLoop()
	go c.readLoop()
	return c, nil
}

func (c *fwdClient) alive() bool {
	select {
	case <-c.dead:
		return false
	default:
		return true
	}
}

// call sends one request and waits for its answer or ctx.
func (c *fwdClient) call(ctx context.Context, kind byte, payload []byte) (fwdResp, error) {
	call, err := c.send(ctx, kind, payload)
	if err != nil {
		return fwdResp{}, err
	}
	return c.await(ctx, call)
}

// send queues one request on the connection without waiting for its
// answer; await waits for it. The connection writes requests in the order
// they are sent, and the leader proposes them in the order they arrive.
func (c *fwdClient) send(ctx context.Context, kind byte, payload []byte) (*fwdCall, error) {
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

func (c *fwdClient) await(ctx context.Context, call *fwdCall) (fwdResp, error) {
	select {
	case r := <-call.done:
		return r, r.err
	case <-ctx.Done():
		c.forget(call.seq)
		return fwdResp{}, ctx.Err()
	}
}

func (c *fwdClient) forget(seq uint64) {
	c.mu.Lock()
	delete(c.inUse, seq)
	c.mu.Unlock()
}

// writeLoop writes the calls in the order they were sent. Applies that
// queued together go out as one fwdApplyBatch frame (the leader's group
// commit then finds them together too); any other call ends a batch, so
// the order on the wire is the order sent.
func (c *fwdClient) writeLoop() {
	bw := bufio.NewWriterSize(c.conn, 64<<10)
	var batch []*fwdCall
	var next *fwdCall // taken from the queue but not part of the batch
	maxBytes := min(int(c.maxFrame)/2, maxForwardBatchBytes)
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
		for call.kind == fwdApply && len(batch) < maxForwardBatch {
			select {
			case more := <-c.calls:
				if more.kind != fwdApply || size+len(more.payload) > maxBytes {
					next = more
					break gather
				}
				batch, size = append(batch, more), size+len(more.payload)
			default:
				break gather
			}
		}
		var err error
		if len(batch) == 1 {
			err = writeFrame(bw, call.kind, call.seq, call.payload)
		} else {
			err = writeFrame(bw, fwdApplyBatch, 0, encodeApplyBatch(batch))
		}
		if err == nil && next == nil && len(c.calls) == 0 {
			err = bw.Flush()
		}
		if err != nil {
			c.fail()
			return
		}
	}
}

func (c *fwdClient) readLoop() {
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
func (c *fwdClient) fail() {
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

func (c *fwdClient) close() { c.fail() }

// serveForward runs on the leader side of one forwarding connection.
func (s *Store) serveForward(conn net.Conn) {
	select {
	case <-s.started:
	case <-s.closing:
		conn.Close()
		return
	}
	s.fwdConns.Add(1)
	defer s.fwdConns.Done()
	s.trackConn(conn, true)
	defer s.trackConn(conn, false)
	defer conn.Close()

	type answer struct {
		seq  uint64
		wait func() (byte, []byte)
	}
	answers := make(chan answer, 1024)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		bw := bufio.NewWriterSize(conn, 64<<10)
		broken := false
		for a := range answers {
			status, payload := a.wait()
			if broken {
				continue // drain so the reader never blocks
			}
			writeFrame(bw, status, a.seq, payload)
			if len(answers) == 0 {
				if err := bw.Flush(); err != nil {
					broken = true
					conn.Close()
				}
			}
		}
		bw.Flush()
	}()
	defer func() {
		close(answers)
		<-writerDone
	}()

	br := bufio.NewReaderSize(conn, 64<<10)
	for {
		kind, seq, payload, err := readFrame(conn, br, s.maxFrame())
		if errors.Is(err, errFrameTooLarge) {
			s.logger.Warn("forwarding: closing the connection", "error", err, "peer", conn.RemoteAddr())
		}
		if err != nil {
			return
		}
		if kind != fwdApplyBatch {
			answers <- answer{seq: seq, wait: s.handleForwarded(kind, payload)}
			continue
		}
		// Many applies in one frame: each answered under its own seq.
		s.fwdBatches.Add(1)
		err = decodeApplyBatch(payload, func(seq uint64, cmd []byte) {
			answers <- answer{seq: seq, wait: s.handleForwarded(fwdApply, cmd)}
		})
		if err != nil {
			s.logger.Warn("forwarding: closing the connection", "error", err, "peer", conn.RemoteAddr())
			return
		}
	}
}

// handleForwarded starts one forwarded request and returns a function that
// waits for its answer. Applies are handed to Raft at once, so the requests
// of one connection are batched together by Raft.
func (s *Store) handleForwarded(kind byte, payload []byte) func() (byte, []byte) {
	switch kind {
	case fwdApply:
		wait, err := s.proposeLocal(payload)
		if err != nil {
			return func() (byte, []byte) { return errAnswer(err) }
		}
		return func() (byte, []byte) {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout)
			defer cancel()
			res, err := wait(ctx)
			if errors.Is(err, ErrTimeout) || errors.Is(err, ErrShutdown) {
				err = fmt.Errorf("%w: %v", errRetry, err) // fate unknown: the follower retries
			}
			if err != nil {
				return errAnswer(err)
			}
			return statusOK, res.Encode(nil)
		}
	case fwdReadIndex:
		return func() (byte, []byte) {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout)
			defer cancel()
			idx, err := s.leaderReadIndex(ctx)
			if err != nil {
				return errAnswer(err)
			}
			return statusOK, binary.BigEndian.AppendUint64(nil, idx)
		}
	case fwdClock:
		now := s.stampNow()
		return func() (byte, []byte) { return statusOK, binary.BigEndian.AppendUint64(nil, uint64(now)) }
	case fwdStatus:
		st := s.statusAnswer()
		return func() (byte, []byte) { return statusOK, st }
	case fwdPeers:
		return func() (byte, []byte) { return statusOK, s.peersAnswer() }
	case fwdAddVoter, fwdRemove, fwdPromote:
		return func() (byte, []byte) {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout)
			defer cancel()
			err := s.changeMembershipLocal(ctx, kind, payload)
			if err != nil {
				return errAnswer(err)
			}
			return statusOK, nil
		}
	}
	return func() (byte, []byte) { return errAnswer(fmt.Errorf("unknown request kind %q", kind)) }
}

// forward sends a request to the leader and maps its answer to an error.
func (s *Store) forward(ctx context.Context, leaderID, leaderAddr string, kind byte, payload []byte) ([]byte, error) {
	wait, err := s.forwardSend(ctx, leaderID, leaderAddr, kind, payload)
	if err != nil {
		return nil, err
	}
	return wait(ctx)
}

// forwardSend queues a request to the leader on its connection and returns
// the wait for its answer, mapped to an error as forward's: requests sent
// one after another reach the leader in that order (ApplyInOrder).
func (s *Store) forwardSend(ctx context.Context, leaderID, leaderAddr string, kind byte, payload []byte) (func(context.Context) ([]byte, error), error) {
	c, err := s.fwdClientFor(leaderID, leaderAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w: dial leader %s: %v", errRetry, errNotSent, leaderID, err)
	}
	call, err := c.send(ctx, kind, payload)
	if err != nil {
		return nil, connErr(err)
	}
	return func(ctx context.Context) ([]byte, error) {
		r, err := c.await(ctx, call)
		if err != nil {
			return nil, connErr(err)
		}
		if err := answerErr(r.status, r.payload, leaderID); err != nil {
			return nil, err
		}
		return r.payload, nil
	}, nil
}

// connErr marks a lost connection as a retry (the request's fate is
// unknown: it is retried under the same request id).
func connErr(err error) error {
	if errors.Is(err, errConnLost) {
		return fmt.Errorf("%w: %v", errRetry, err)
	}
	return err
}

// maxFrame bounds a forwarding frame: the largest command, and room for
// the rest.
func (s *Store) maxFrame() uint32 { return uint32(s.cfg.MaxCommandBytes + frameOverhead) }

func (s *Store) fwdClientFor(id, addr string) (*fwdClient, error) {
	target := s.dialAddr(id, addr)
	s.fwdMu.Lock()
	defer s.fwdMu.Unlock()
	if s.fwdClosed {
		return nil, ErrShutdown
	}
	if c := s.fwd[target]; c != nil && c.alive() {
		return c, nil
	}
	c, err := dialForward(target, s.cfg.DialTimeout, s.clusterID(), s.peerClientTLS(id), s.maxFrame())
	if err != nil {
		return nil, err
	}
	s.fwd[target] = c
	return c, nil
}
