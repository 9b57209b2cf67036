package resp

import (
	"bufio"
	"bytes"
	"net"
	"strconv"
	"strings"
	"time"
)

// deadlineWriter is what a connection's replies and invalidations are
// written to: every write to the socket gets WriteTimeout of its own, set
// as it begins. A deadline set only before a flush would leave the writes
// a full buffer makes before it under the last flush's deadline, long
// past (failing at once) or never set; so a client that stops reading is
// closed once one write has waited WriteTimeout, whatever the write is.
// It counts what reached the socket, for peerReading.
type deadlineWriter struct {
	nc      net.Conn
	timeout time.Duration
	peer    peerReading
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.nc.SetWriteDeadline(time.Now().Add(d.timeout))
	n, err := d.nc.Write(p)
	d.peer.sent.Add(int64(n))
	return n, err
}

// writer encodes replies in the connection's protocol version: RESP2, or
// RESP3 after HELLO 3 (nulls, maps and verbatim strings differ).
type writer struct {
	bw     *bufio.Writer
	proto  int
	buf    []byte
	errors int // error replies written: the metrics' result
	// stats counts them by code for INFO errorstats: a client
	// connection's writer's (nil for a script's or a forwarded run's).
	stats *errorStats
	// real is the connection's buffer while CLIENT REPLY silences the
	// command running (bw is then discard): reply_mode.go.
	real, discard *bufio.Writer
}

func (w *writer) raw(b []byte) { w.bw.Write(b) }

// rawReply writes a reply made elsewhere (a transaction's, a script the
// leader ran), counting it as errorLine would when it is an error.
func (w *writer) rawReply(b []byte) {
	if len(b) > 0 && b[0] == '-' {
		w.errors++
		if w.stats != nil {
			line, _, _ := bytes.Cut(b[1:], []byte("\r\n"))
			w.stats.add(string(line))
		}
	}
	w.bw.Write(b)
}

func (w *writer) prefixed(prefix byte, n int64) {
	w.buf = append(w.buf[:0], prefix)
	w.buf = strconv.AppendInt(w.buf, n, 10)
	w.buf = append(w.buf, '\r', '\n')
	w.bw.Write(w.buf)
}

// simple writes +s; s must hold no CR or LF.
func (w *writer) simple(s string) {
	w.bw.WriteByte('+')
	w.bw.WriteString(s)
	w.bw.WriteString("\r\n")
}

func (w *writer) ok() { w.bw.WriteString("+OK\r\n") }

// errorLine writes -msg; msg starts with its code (ERR, NOAUTH, ...). CR
// and LF would end the line early, so they become spaces.
func (w *writer) errorLine(msg string) {
	w.errors++
	if w.stats != nil {
		w.stats.add(msg)
	}
	w.bw.WriteByte('-')
	w.bw.WriteString(strings.NewReplacer("\r", " ", "\n", " ").Replace(msg))
	w.bw.WriteString("\r\n")
}

func (w *writer) integer(n int64) { w.prefixed(':', n) }

func (w *writer) bulk(b []byte) {
	w.prefixed('$', int64(len(b)))
	w.bw.Write(b)
	w.bw.WriteString("\r\n")
}

func (w *writer) bulkString(s string) {
	w.prefixed('$', int64(len(s)))
	w.bw.WriteString(s)
	w.bw.WriteString("\r\n")
}

// null is the absent value: $-1 in RESP2, _ in RESP3.
func (w *writer) null() {
	if w.proto >= 3 {
		w.bw.WriteString("_\r\n")
		return
	}
	w.bw.WriteString("$-1\r\n")
}

func (w *writer) array(n int) { w.prefixed('*', int64(n)) }

// nullArray is the absent array (EXEC whose watched key changed): *-1 in
// RESP2, _ in RESP3.
func (w *writer) nullArray() {
	if w.proto >= 3 {
		w.bw.WriteString("_\r\n")
		return
	}
	w.bw.WriteString("*-1\r\n")
}

// mapHeader starts a map of n pairs: %n in RESP3, a flat array of 2n in
// RESP2.
func (w *writer) mapHeader(n int) {
	if w.proto >= 3 {
		w.prefixed('%', int64(n))
		return
	}
	w.prefixed('*', int64(2*n))
}

// set starts a set of n: ~n in RESP3, an array in RESP2.
func (w *writer) set(n int) {
	if w.proto >= 3 {
		w.prefixed('~', int64(n))
		return
	}
	w.prefixed('*', int64(n))
}

// push starts a push of n items (RESP3 only: an invalidation).
func (w *writer) push(n int) { w.prefixed('>', int64(n)) }

// verbatim is text for humans (INFO, CLIENT INFO): =len txt:... in
// RESP3, a bulk string in RESP2.
func (w *writer) verbatim(s string) {
	if w.proto >= 3 {
		w.prefixed('=', int64(len(s)+4))
		w.bw.WriteString("txt:")
		w.bw.WriteString(s)
		w.bw.WriteString("\r\n")
		return
	}
	w.bulkString(s)
}
