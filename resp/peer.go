package resp

import (
	"sync/atomic"
	"time"
)

// peerReading tells whether a connection's client is taking what the
// node writes to it. A write to the socket succeeds as long as the
// kernel has room, and a client tracking keys that never reads its
// socket fills the kernel's buffers only as fast as its invalidations
// come: past TrackingMaxPending they collapse into one small "invalidate
// everything", so the buffers may never fill and no write ever waits its
// WriteTimeout. What the client's kernel has acknowledged is the
// measure instead: the bytes written (deadlineWriter counts them) less
// those still unacknowledged in the socket (Linux's SIOCOUTQ; elsewhere
// unknown, and then only a write's own timeout closes the connection).
// When bytes wait and none more were acknowledged for WriteTimeout, the
// client is not reading: its connection ends, as a slow reader's does.
type peerReading struct {
	sent    atomic.Int64 // bytes written to the socket
	acked   int64        // sent less unacknowledged, at the last look
	waiting time.Time    // since when bytes wait with none acknowledged (zero: none wait)
}

// stalled looks at the socket now: true once bytes have waited longer
// than the write timeout with none of them acknowledged. It is called
// with the connection's write lock held.
func (d *deadlineWriter) stalled(now time.Time) bool {
	p := &d.peer
	unacked, ok := unackedBytes(d.nc)
	if !ok {
		return false
	}
	acked := p.sent.Load() - int64(unacked)
	switch {
	case unacked == 0:
		p.acked, p.waiting = acked, time.Time{}
		return false
	case acked != p.acked || p.waiting.IsZero():
		// Progress, or the first look at bytes waiting: the clock
		// starts now.
		p.acked, p.waiting = acked, now
		return false
	}
	return now.Sub(p.waiting) > d.timeout
}
