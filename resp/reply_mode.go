package resp

import (
	"bufio"
	"io"
	"strings"
)

// CLIENT REPLY ON|OFF|SKIP (Redis 7.0): with OFF no command is answered
// until CLIENT REPLY ON (which answers OK); SKIP leaves the next command
// unanswered. What a subscribed client is pushed is still written: the
// (un)subscribe confirmations and the messages, and the invalidations,
// as Redis's CLIENT_PUSHING writes them whatever the reply mode.
//
// A silenced command's replies go to a buffer over io.Discard in place of
// the connection's (writer.mute), one command at a time: the pipeline's
// runs of reads and writes (pipeline.go) stop at each such command, so no
// reply of an answered command is dropped with it.

// replyMode is a connection's CLIENT REPLY state.
type replyMode struct {
	off      bool // OFF: nothing is answered until ON
	skipNext bool // SKIP: the command after this one is not answered
}

// silenced reports whether the command about to run goes unanswered, and
// ends a SKIP's effect (it covers one command).
func (m *replyMode) silenced() bool {
	skip := m.skipNext
	m.skipNext = false
	return m.off || skip
}

// clientReply is CLIENT REPLY mode.
func (c *conn) clientReply(mode []byte) {
	switch strings.ToLower(string(mode)) {
	case "on":
		c.reply = replyMode{}
		c.w.unmute()
		c.w.ok()
	case "off":
		c.reply.off = true
	case "skip":
		c.reply.skipNext = true
	default:
		c.w.errorLine(msgSyntax)
	}
}

// mute sends what is written next to nowhere, until unmute.
func (w *writer) mute() {
	if w.real != nil {
		return
	}
	if w.discard == nil {
		w.discard = bufio.NewWriterSize(io.Discard, 512)
	}
	w.real, w.bw = w.bw, w.discard
}

// unmute writes to the connection again.
func (w *writer) unmute() {
	if w.real != nil {
		w.bw, w.real = w.real, nil
	}
}

// pushing runs f, which writes what a client is pushed, to the
// connection even while its replies are off.
func (w *writer) pushing(f func()) {
	real := w.real
	w.unmute()
	f()
	if real != nil {
		w.mute()
	}
}
