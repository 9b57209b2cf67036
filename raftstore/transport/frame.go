package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// The forwarding protocol. After the protocol byte (protoForward, mux.go) a
// follower sends requests to the leader over one long-lived connection,
// many in flight at once (pipelined); the leader answers each, in request
// order. Requests and answers are frames of one layout:
//
//	tag (1) | seq (8, big endian) | len (4, big endian) | payload (len bytes)
//
// A request's tag is its kind (Apply, ...), an answer's its status
// (statusOK, ...); seq pairs an answer with its request. A statusError
// answer's payload is an error code (1 byte, Errors.Coded) and the message.
// What a request's payload and an OK answer's hold is the node's (its
// Handler's); the comments below say what the store puts there.

// Kind is what a forwarded request asks.
type Kind byte

// The kinds of request. Their bytes are part of the wire format.
const (
	Apply      Kind = 'A' // payload: an encoded fsm.Command; answer: an encoded fsm.Result
	applyBatch Kind = 'M' // frame seq unused; payload: applies (encodeApplyBatch), each answered as an Apply under its own seq
	ReadIndex  Kind = 'I' // payload: the commit index the follower knows (8 bytes; empty from earlier builds); answer: read index (8 bytes)
	AddVoter   Kind = 'V' // payload: id \0 address [\0 "nonvoter"]
	Remove     Kind = 'X' // payload: id [\0 "force"]
	Promote    Kind = 'U' // payload: id [\0 "force"]
	Clock      Kind = 'T' // payload: empty; answer: the node's wall clock (8 bytes, unix ns); any node answers
	Status     Kind = 'S' // payload: empty; answer: the node's indexes and state; any node answers
	Peers      Kind = 'P' // payload: empty; answer: the node's view of the members (JSON); any node answers
	Grants     Kind = 'G' // payload: a cursor (16 bytes); answer: the lock grants the node applied after it, held up to a second for some, answered beside the queue (answeredAtOnce); any node answers
	LeaderKV   Kind = 'K' // payload: unix ns (8) | a stored KV key; answer: the leader's entry of it, or empty when absent
	// LeaderScript: payload: a script a follower's client sent, as the
	// Redis listener encodes it; answer: the reply the leader's listener
	// wrote for it, answered beside the queue (answeredAtOnce). Sent
	// only to a leader whose hello names FeatureLeaderScript.
	LeaderScript Kind = 'E'
)

// The applies with a trace context (trace.go), sent only to a leader whose
// hello names FeatureTracedApply.
const (
	applyTraced      Kind = 'a' // payload: a trace context | an encoded fsm.Command; answered as an Apply
	applyBatchTraced Kind = 'm' // frame seq unused; payload: trace contexts | applies (encodeTracedApplyBatch), answered as applyBatch's
)

const (
	statusOK        byte = 0
	statusNotLeader byte = 1 // retry against the current leader
	statusRetry     byte = 2 // leadership lost mid-way: retry (same request id)
	statusError     byte = 3 // a final error: code (1) | message
	statusShutdown  byte = 4

	frameHeaderLen = 13
	// FrameOverhead is what a frame may hold besides a command (a result's
	// fields, an error message): a node's frame limit is its largest
	// command plus this.
	FrameOverhead = 64 << 10
)

// frameTimeout bounds reading one frame's payload once its header came: a
// peer that stops mid-frame is cut off. A variable for the tests.
var frameTimeout = 10 * time.Second

// Errors are the errors that keep their identity across the forwarding
// hop: the follower's caller gets the leader's sentinel, and errors.Is
// works on it. The node gives the same Errors to its Server and to every
// Client.
type Errors struct {
	// NotLeader is the answer of a node that is not the leader; it comes
	// back as itself.
	NotLeader error
	// Retry marks a request whose fate is unknown or that reached a node
	// losing leadership: the same request (same request id) is sent
	// again. An error wrapping it is answered as one; a leader shutting
	// down and a lost connection come back wrapping it.
	Retry error
	// Shutdown is the answer of a node that is closing; it comes back
	// wrapping Retry and NotSent.
	Shutdown error
	// NotSent marks a request the peer turned away before acting on it
	// (it was shutting down): retried, and known to have done nothing.
	NotSent error
	// Coded are the final errors sent by code: Coded[i] is code i, and
	// Coded[0] must be nil (an error of none of them, sent by its message
	// only). Append only: codes are part of the wire format.
	Coded []error
}

// remoteError is a final error the leader reported without a code.
type remoteError struct{ msg string }

func (e *remoteError) Error() string { return e.msg }

// A follower packs the applies that queue on its connection into one frame
// (at most maxForwardBatch of them and maxForwardBatchBytes of commands):
//
//	count (uvarint) | count × (seq (8) | length (uvarint) | encoded command)
const (
	maxForwardBatch      = 256
	maxForwardBatchBytes = 1 << 20
)

func encodeApplyBatch(calls []*fwdCall) []byte {
	n := binary.MaxVarintLen64
	for _, c := range calls {
		n += 8 + binary.MaxVarintLen64 + len(c.payload)
	}
	b := binary.AppendUvarint(make([]byte, 0, n), uint64(len(calls)))
	for _, c := range calls {
		cmd := c.command()
		b = binary.BigEndian.AppendUint64(b, c.seq)
		b = binary.AppendUvarint(b, uint64(len(cmd)))
		b = append(b, cmd...)
	}
	return b
}

// decodeApplyBatch calls each for every apply of a batch frame, in order;
// a malformed frame is an error (the connection is closed).
func decodeApplyBatch(p []byte, each func(seq uint64, cmd []byte)) error {
	n, k := binary.Uvarint(p)
	if k <= 0 || n == 0 || n > maxForwardBatch {
		return errors.New("transport: malformed apply batch (count)")
	}
	p = p[k:]
	type entry struct {
		seq uint64
		cmd []byte
	}
	entries := make([]entry, 0, n)
	for i := uint64(0); i < n; i++ {
		if len(p) < 8 {
			return errors.New("transport: malformed apply batch (truncated)")
		}
		seq := binary.BigEndian.Uint64(p)
		l, k := binary.Uvarint(p[8:])
		if k <= 0 || l > uint64(len(p)-8-k) {
			return errors.New("transport: malformed apply batch (length)")
		}
		entries = append(entries, entry{seq, p[8+k : 8+k+int(l)]})
		p = p[8+k+int(l):]
	}
	if len(p) != 0 {
		return errors.New("transport: malformed apply batch (trailing bytes)")
	}
	for _, e := range entries { // checked whole before any is proposed
		each(e.seq, e.cmd)
	}
	return nil
}

// writeFrame appends one frame to w (the caller flushes).
func writeFrame(w *bufio.Writer, tag byte, seq uint64, payload []byte) error {
	var hdr [frameHeaderLen]byte
	hdr[0] = tag
	binary.BigEndian.PutUint64(hdr[1:], seq)
	binary.BigEndian.PutUint32(hdr[9:], uint32(len(payload)))
	w.Write(hdr[:])
	_, err := w.Write(payload)
	return err
}

// errFrameTooLarge: a frame header announced more than the limit.
var errFrameTooLarge = errors.New("forwarding frame over the limit")

// readFrame reads one frame from r: the header whenever it comes (a
// connection may be idle), then a payload of at most max bytes within
// frameTimeout.
func readFrame(conn net.Conn, r *bufio.Reader, max uint32) (tag byte, seq uint64, payload []byte, err error) {
	var hdr [frameHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[9:])
	if n > max {
		return 0, 0, nil, fmt.Errorf("%w: %d bytes, the limit is %d", errFrameTooLarge, n, max)
	}
	payload = make([]byte, n)
	conn.SetReadDeadline(time.Now().Add(frameTimeout))
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, 0, nil, err
	}
	conn.SetReadDeadline(time.Time{})
	return hdr[0], binary.BigEndian.Uint64(hdr[1:]), payload, nil
}

// answer is the answer to a request that failed with err.
func (e *Errors) answer(err error) (byte, []byte) {
	switch {
	case errors.Is(err, e.NotLeader):
		return statusNotLeader, nil
	case errors.Is(err, e.Retry):
		return statusRetry, []byte(err.Error())
	case errors.Is(err, e.Shutdown):
		return statusShutdown, nil
	}
	code := byte(0)
	for i, known := range e.Coded {
		if known != nil && errors.Is(err, known) {
			code = byte(i)
			break
		}
	}
	return statusError, append([]byte{code}, err.Error()...)
}

// err is the error an answer with status carries, for the request to
// leaderID; nil for statusOK.
func (e *Errors) err(status byte, payload []byte, leaderID string) error {
	switch status {
	case statusOK:
		return nil
	case statusNotLeader:
		return e.NotLeader
	case statusRetry:
		return fmt.Errorf("%w: leader %s: %s", e.Retry, leaderID, payload)
	case statusShutdown:
		return fmt.Errorf("%w: %w: leader %s is shutting down", e.Retry, e.NotSent, leaderID)
	case statusError:
		if len(payload) > 0 && int(payload[0]) < len(e.Coded) && e.Coded[payload[0]] != nil {
			known := e.Coded[payload[0]]
			msg := string(payload[1:])
			if len(msg) >= len(known.Error()) && msg[:len(known.Error())] == known.Error() {
				msg = msg[len(known.Error()):] // the message starts with the sentinel's own text
			} else {
				msg = ": " + msg
			}
			return fmt.Errorf("%w%s", known, msg)
		}
		if len(payload) > 0 {
			payload = payload[1:]
		}
		return &remoteError{msg: string(payload)}
	}
	return fmt.Errorf("transport: leader %s answered with unknown status %d", leaderID, status)
}
