package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Pub/Sub fan-out: a node's published messages to each peer. After the
// protocol byte (protoPubSub, mux.go) the dialling node sends frames of the
// forwarding layout (frame.go), tag tagPubSub, seq unused, and nothing comes
// back. A frame's payload is the messages that queued while the one before
// it was written:
//
//	count (uvarint) | count × (flags (1) | channel length (uvarint) | channel | message length (uvarint) | message)
//
// flags bit 0: a shard channel's (SPUBLISH). Nothing is acknowledged or
// retried: a message reaches a peer at most once, as Redis Cluster's bus
// carries PUBLISH. A link's queue is bounded (what one frame holds); a
// message that does not fit, or that was queued or in flight when the
// connection broke, is lost for that peer and counted.

const tagPubSub byte = 'B'

// errPubSubFrame: a Pub/Sub frame that is not of the layout above; the
// connection is closed.
var errPubSubFrame = errors.New("transport: malformed pub/sub frame")

// Link backoff: after a failed dial or write a link waits this long, then
// twice as long up to the cap, before it dials again; a message queued
// meanwhile waits in the queue (bounded).
const (
	linkBackoff    = 50 * time.Millisecond
	linkBackoffMax = 2 * time.Second
)

// Link is this node's long-lived Pub/Sub connection to one peer: Send
// queues and never waits; one goroutine dials, writes what queued as one
// frame, and dials again after a failure.
type Link struct {
	peer     func() Peer // read at each dial: the peer's address may move
	maxFrame uint32
	// write writes and flushes the n messages of batch: writeBatch, as
	// one frame (the benchmark compares a frame a message).
	write func(bw *bufio.Writer, n int, batch []byte) error

	mu      sync.Mutex
	queue   []byte // encoded messages waiting (after a count's room)
	count   int
	closed  bool
	wake    chan struct{}
	done    chan struct{}
	stopped chan struct{}

	// Sent, Dropped and Dials count messages written, messages lost (no
	// room, or in flight when the connection broke) and connections made.
	Sent, Dropped, Dials atomic.Int64
}

// NewLink starts a link to peer; frames are at most maxFrame bytes.
func NewLink(peer func() Peer, maxFrame uint32) *Link { return newLink(peer, maxFrame, writeBatch) }

func newLink(peer func() Peer, maxFrame uint32, write func(*bufio.Writer, int, []byte) error) *Link {
	l := &Link{peer: peer, maxFrame: maxFrame, write: write, wake: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	go l.run()
	return l
}

// Send queues one message for the peer; false when it was dropped (the
// queue is full, the message larger than a frame, or the link closed).
func (l *Link) Send(shard bool, channel, message []byte) bool {
	need := 1 + 2*binary.MaxVarintLen32 + len(channel) + len(message)
	l.mu.Lock()
	if l.closed || len(l.queue)+need > int(l.maxFrame)-frameHeaderLen-binary.MaxVarintLen32 {
		l.mu.Unlock()
		l.Dropped.Add(1)
		return false
	}
	l.queue = appendMessage(l.queue, shard, channel, message)
	l.count++
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return true
}

// appendMessage appends one message to b as a frame holds it.
func appendMessage(b []byte, shard bool, channel, message []byte) []byte {
	flags := byte(0)
	if shard {
		flags = 1
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(channel)))
	b = append(b, channel...)
	b = binary.AppendUvarint(b, uint64(len(message)))
	return append(b, message...)
}

// Close stops the link and waits for its goroutine; what is queued is
// lost.
func (l *Link) Close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.done)
	}
	l.mu.Unlock()
	<-l.stopped
}

func (l *Link) run() {
	defer close(l.stopped)
	var (
		conn    net.Conn
		bw      *bufio.Writer
		spare   []byte
		backoff time.Duration
	)
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		select {
		case <-l.done:
			return
		case <-l.wake:
		}
		if conn == nil {
			p := l.peer()
			c, err := dialProto(p.Addr, p.Timeout, protoPubSub, p.Cluster, p.TLS)
			if err != nil {
				backoff = min(max(2*backoff, linkBackoff), linkBackoffMax)
				if !l.sleep(backoff) {
					return
				}
				l.poke() // what queued meanwhile is tried again
				continue
			}
			conn, bw, backoff = c, bufio.NewWriterSize(c, 64<<10), 0
			l.Dials.Add(1)
			go drain(c) // the peer sends nothing; a read error tells of a close
		}
		l.mu.Lock()
		batch, n := l.queue, l.count
		l.queue, l.count = spare[:0], 0
		l.mu.Unlock()
		if n == 0 {
			spare = batch
			continue
		}
		spare = batch
		conn.SetWriteDeadline(time.Now().Add(frameTimeout))
		if err := l.write(bw, n, batch); err != nil {
			// At most once: what was in flight is lost for this peer.
			l.Dropped.Add(int64(n))
			conn.Close()
			conn = nil
			l.poke()
			continue
		}
		l.Sent.Add(int64(n))
	}
}

// writeBatch writes the n messages of batch as one frame, and flushes.
func writeBatch(bw *bufio.Writer, n int, batch []byte) error {
	payload := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen32+len(batch)), uint64(n))
	payload = append(payload, batch...)
	if err := writeFrame(bw, tagPubSub, 0, payload); err != nil {
		return err
	}
	return bw.Flush()
}

// poke wakes the link's goroutine for what is queued.
func (l *Link) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// sleep waits d, false when the link closed meanwhile.
func (l *Link) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.done:
		return false
	}
}

// drain reads (and drops) what a peer sends on a link until it closes.
func drain(c net.Conn) {
	var b [64]byte
	for {
		if _, err := c.Read(b[:]); err != nil {
			c.Close() // the writer's next write fails, and it dials again
			return
		}
	}
}

// ServePubSub reads one Pub/Sub connection past its preamble until it ends
// or sends a malformed frame, handing each message to deliver (its slices
// are the frame's: deliver copies what it keeps), and closes it.
func ServePubSub(conn net.Conn, maxFrame uint32, deliver func(shard bool, channel, message []byte)) error {
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 64<<10)
	for {
		tag, _, payload, err := readFrame(conn, br, maxFrame)
		if err != nil {
			return err
		}
		if tag != tagPubSub {
			return errPubSubFrame
		}
		if err := decodePubSub(payload, deliver); err != nil {
			return err
		}
	}
}

// decodePubSub calls each for every message of a frame's payload, after
// checking the whole frame: a malformed one delivers nothing.
func decodePubSub(p []byte, each func(shard bool, channel, message []byte)) error {
	n, k := binary.Uvarint(p)
	if k <= 0 || n == 0 || n > uint64(len(p)) {
		return errPubSubFrame
	}
	for pass := 0; pass < 2; pass++ {
		q := p[k:]
		for i := uint64(0); i < n; i++ {
			if len(q) < 1 || q[0] > 1 {
				return errPubSubFrame
			}
			flags := q[0]
			q = q[1:]
			var parts [2][]byte
			for j := range parts {
				l, m := binary.Uvarint(q)
				if m <= 0 || l > uint64(len(q)-m) {
					return errPubSubFrame
				}
				parts[j], q = q[m:m+int(l)], q[m+int(l):]
			}
			if pass == 1 {
				each(flags == 1, parts[0], parts[1])
			}
		}
		if len(q) != 0 {
			return errPubSubFrame
		}
	}
	return nil
}
