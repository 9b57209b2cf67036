package raftstore

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// Forwarding: a follower sends requests to the leader over one long-lived
// connection per leader address, many in flight at once (pipelined). The
// leader answers in request order.
//
//	request:  kind (1) | seq (8) | len (4) | payload
//	response: seq (8) | status (1) | len (4) | payload
const (
	fwdApply     byte = 'A' // payload: an encoded fsm.Command
	fwdReadIndex byte = 'I' // payload: empty; answer: read index (8 bytes)
	fwdAddVoter  byte = 'V' // payload: id \0 address
	fwdRemove    byte = 'X' // payload: id
	fwdClock     byte = 'T' // payload: empty; answer: the node's wall clock (8 bytes, unix ns); any node answers

	statusOK        byte = 0
	statusNotLeader byte = 1 // retry against the current leader
	statusRetry     byte = 2 // leadership lost mid-way: retry (same request id)
	statusError     byte = 3 // a final error; payload is its message
	statusShutdown  byte = 4

	// frameOverhead is what a frame may hold besides a command (a result's
	// fields, an error message).
	frameOverhead = 64 << 10
)

// frameTimeout bounds reading one frame's payload once its header came: a
// peer that stops mid-frame is cut off. A variable for the tests.
var frameTimeout = 10 * time.Second

var errConnLost = errors.New("forwarding connection lost")

// remoteError is a final error reported by the leader.
type remoteError struct{ msg string }

func (e *remoteError) Error() string { return e.msg }

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

func dialForward(addr string, timeout time.Duration, tlsCfg *tls.Config, maxFrame uint32) (*fwdClient, error) {
	conn, err := dialProto(addr, timeout, protoForward, tlsCfg)
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
	call := &fwdCall{kind: kind, payload: payload, done: make(chan fwdResp, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fwdResp{}, errConnLost
	}
	c.seq++
	call.seq = c.seq
	c.inUse[call.seq] = call
	c.mu.Unlock()
	select {
	case c.calls <- call:
	case <-c.dead:
		return fwdResp{}, errConnLost
	case <-ctx.Done():
		c.forget(call.seq)
		return fwdResp{}, ctx.Err()
	}
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

func (c *fwdClient) writeLoop() {
	bw := bufio.NewWriterSize(c.conn, 64<<10)
	var hdr [13]byte
	for {
		var call *fwdCall
		select {
		case call = <-c.calls:
		case <-c.dead:
			return
		}
		hdr[0] = call.kind
		binary.BigEndian.PutUint64(hdr[1:], call.seq)
		binary.BigEndian.PutUint32(hdr[9:], uint32(len(call.payload)))
		bw.Write(hdr[:])
		if _, err := bw.Write(call.payload); err != nil {
			c.fail()
			return
		}
		if len(c.calls) == 0 {
			if err := bw.Flush(); err != nil {
				c.fail()
				return
			}
		}
	}
}

func (c *fwdClient) readLoop() {
	br := bufio.NewReaderSize(c.conn, 64<<10)
	var hdr [13]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			c.fail()
			return
		}
		seq := binary.BigEndian.Uint64(hdr[:])
		n := binary.BigEndian.Uint32(hdr[9:])
		if n > c.maxFrame {
			c.fail()
			return
		}
		payload := make([]byte, n)
		c.conn.SetReadDeadline(time.Now().Add(frameTimeout))
		if _, err := io.ReadFull(br, payload); err != nil {
			c.fail()
			return
		}
		c.conn.SetReadDeadline(time.Time{})
		c.mu.Lock()
		call := c.inUse[seq]
		delete(c.inUse, seq)
		c.mu.Unlock()
		if call != nil {
			call.done <- fwdResp{status: hdr[8], payload: payload}
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
		var hdr [13]byte
		broken := false
		for a := range answers {
			status, payload := a.wait()
			if broken {
				continue // drain so the reader never blocks
			}
			binary.BigEndian.PutUint64(hdr[:], a.seq)
			hdr[8] = status
			binary.BigEndian.PutUint32(hdr[9:], uint32(len(payload)))
			bw.Write(hdr[:])
			bw.Write(payload)
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
	var hdr [13]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return
		}
		kind := hdr[0]
		seq := binary.BigEndian.Uint64(hdr[1:])
		n := binary.BigEndian.Uint32(hdr[9:])
		if n > s.maxFrame() {
			s.logger.Warn("forwarding: frame over the limit; closing the connection", "bytes", n, "limit", s.maxFrame(), "peer", conn.RemoteAddr())
			return
		}
		payload := make([]byte, n)
		conn.SetReadDeadline(time.Now().Add(frameTimeout))
		if _, err := io.ReadFull(br, payload); err != nil {
			return
		}
		conn.SetReadDeadline(time.Time{})
		answers <- answer{seq: seq, wait: s.handleForwarded(kind, payload)}
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
			return func() (byte, []byte) { return errStatus(err) }
		}
		return func() (byte, []byte) {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout)
			defer cancel()
			res, err := wait(ctx)
			if errors.Is(err, ErrTimeout) || errors.Is(err, ErrShutdown) {
				err = fmt.Errorf("%w: %v", errRetry, err) // fate unknown: the follower retries
			}
			if err != nil {
				return errStatus(err)
			}
			return statusOK, res.Encode(nil)
		}
	case fwdReadIndex:
		return func() (byte, []byte) {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout)
			defer cancel()
			idx, err := s.leaderReadIndex(ctx)
			if err != nil {
				return errStatus(err)
			}
			return statusOK, binary.BigEndian.AppendUint64(nil, idx)
		}
	case fwdClock:
		now := s.stampNow()
		return func() (byte, []byte) { return statusOK, binary.BigEndian.AppendUint64(nil, uint64(now)) }
	case fwdAddVoter, fwdRemove:
		return func() (byte, []byte) {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout)
			defer cancel()
			err := s.changeMembershipLocal(ctx, kind, payload)
			if err != nil {
				return errStatus(err)
			}
			return statusOK, nil
		}
	}
	return func() (byte, []byte) { return statusError, []byte(fmt.Sprintf("unknown request kind %q", kind)) }
}

func errStatus(err error) (byte, []byte) {
	switch {
	case errors.Is(err, ErrNotLeader):
		return statusNotLeader, nil
	case errors.Is(err, errRetry):
		return statusRetry, []byte(err.Error())
	case errors.Is(err, ErrShutdown):
		return statusShutdown, nil
	}
	return statusError, []byte(err.Error())
}

// forward sends a request to the leader and maps its answer to an error.
func (s *Store) forward(ctx context.Context, leaderID, leaderAddr string, kind byte, payload []byte) ([]byte, error) {
	c, err := s.fwdClientFor(leaderID, leaderAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: dial leader %s: %v", errRetry, leaderID, err)
	}
	r, err := c.call(ctx, kind, payload)
	if err != nil {
		if errors.Is(err, errConnLost) {
			return nil, fmt.Errorf("%w: %v", errRetry, err)
		}
		return nil, err
	}
	switch r.status {
	case statusOK:
		return r.payload, nil
	case statusNotLeader:
		return nil, ErrNotLeader
	case statusRetry:
		return nil, fmt.Errorf("%w: leader %s: %s", errRetry, leaderID, r.payload)
	case statusShutdown:
		return nil, fmt.Errorf("%w: leader %s is shutting down", errRetry, leaderID)
	}
	msg := string(r.payload)
	for _, known := range []error{ErrUnknownNode, ErrUnreachableNode, ErrDiskFull, ErrTooLarge, ErrClockJump} {
		if strings.HasPrefix(msg, known.Error()) {
			return nil, fmt.Errorf("%w%s", known, strings.TrimPrefix(msg, known.Error()))
		}
	}
	return nil, &remoteError{msg: msg}
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
	c, err := dialForward(target, s.cfg.DialTimeout, s.peerClientTLS(id), s.maxFrame())
	if err != nil {
		return nil, err
	}
	s.fwd[target] = c
	return c, nil
}
