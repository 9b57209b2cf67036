package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ProtocolError is a malformed frame. Redis answers it with
// "-ERR Protocol error: ..." and closes the connection; so does the server.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

func protoErr(format string, a ...any) error { return &ProtocolError{Msg: fmt.Sprintf(format, a...)} }

// readLimits bound what one request may make the reader hold.
type readLimits struct {
	maxBulk, maxArgs, maxInline int
	// maxRequest bounds one request's arguments together: a request
	// whose lengths pass it is refused before those bytes are read.
	maxRequest int
	// preAuth holds a request of a client that has not authenticated
	// (when tokens are configured) to the pre-AUTH limits.
	preAuth bool
}

// The pre-AUTH limits. A client that has not authenticated may send only
// AUTH, HELLO ... AUTH, PING and QUIT, which need a few short arguments:
// more is refused before it is read, so an unauthenticated connection
// holds a few KiB however large the lengths it announces. Redis 7 allows
// such a client 10 arguments of 16 KiB (its fix of CVE-2021-32675, with
// these replies); a token's secret is far shorter than 4 KiB.
const (
	preAuthMaxArgs   = 10
	preAuthMaxBulk   = 4 << 10
	preAuthMaxInline = 4 << 10
)

// reader parses requests: RESP arrays of bulk strings, and inline
// commands (a line of words, as typed into telnet), as Redis does.
type reader struct {
	br  *bufio.Reader
	lim readLimits
	// acct is charged every argument byte before it is read (budget.go);
	// the connection gives them back once the request is answered.
	acct *account
}

// bulkChunk is the most a bulk string's length alone makes the reader
// allocate: a longer one grows as its bytes arrive, so a length that lies
// costs nothing.
const bulkChunk = 64 << 10

// readRequest reads one request's arguments. io.EOF: the client closed
// between requests. A *ProtocolError: a malformed frame. An empty inline
// line gives no arguments (Redis ignores it).
func (r *reader) readRequest() ([][]byte, error) {
	b, err := r.br.ReadByte()
	if err != nil {
		return nil, err
	}
	if b != '*' {
		r.br.UnreadByte()
		return r.readInline()
	}
	line, err := r.line(32)
	if err != nil {
		return nil, mapTooLong(err, "too big mbulk count string")
	}
	n, ok := parseLen(line)
	if !ok || n > int64(r.lim.maxArgs) {
		return nil, protoErr("invalid multibulk length")
	}
	if r.lim.preAuth && n > preAuthMaxArgs {
		return nil, protoErr("unauthenticated multibulk length")
	}
	if n <= 0 {
		return nil, nil
	}
	args := make([][]byte, 0, min(n, 1024))
	total := int64(0)
	for i := int64(0); i < n; i++ {
		b, err := r.br.ReadByte()
		if err != nil {
			return nil, unexpectedEOF(err)
		}
		if b != '$' {
			return nil, protoErr("expected '$', got '%c'", b)
		}
		line, err := r.line(32)
		if err != nil {
			return nil, mapTooLong(err, "too big bulk count string")
		}
		size, ok := parseLen(line)
		if !ok || size < 0 || size > int64(r.lim.maxBulk) {
			return nil, protoErr("invalid bulk length")
		}
		if r.lim.preAuth && size > preAuthMaxBulk {
			return nil, protoErr("unauthenticated bulk length")
		}
		if total += size; total > int64(r.lim.maxRequest) {
			return nil, protoErr("too big request: its arguments are over %d bytes", r.lim.maxRequest)
		}
		arg, err := r.bulk(int(size))
		if err != nil {
			return nil, err
		}
		args = append(args, arg)
	}
	return args, nil
}

// bulk reads a bulk string's bytes and its CRLF, charging each chunk
// before it is allocated: errBudget when the budget cannot give it.
func (r *reader) bulk(size int) ([]byte, error) {
	if !r.acct.charge(min(size, bulkChunk) + sliceOverhead) {
		return nil, errBudget
	}
	buf := make([]byte, 0, min(size, bulkChunk))
	for len(buf) < size {
		n := min(size-len(buf), bulkChunk)
		if len(buf) > 0 && !r.acct.charge(n) {
			return nil, errBudget
		}
		start := len(buf)
		buf = append(buf, make([]byte, n)...)
		if _, err := io.ReadFull(r.br, buf[start:]); err != nil {
			return nil, unexpectedEOF(err)
		}
	}
	var crlf [2]byte
	if _, err := io.ReadFull(r.br, crlf[:]); err != nil {
		return nil, unexpectedEOF(err)
	}
	if crlf != [2]byte{'\r', '\n'} {
		return nil, protoErr("bulk string not followed by CRLF")
	}
	return buf, nil
}

var errLineTooLong = errors.New("line too long")

// line reads up to LF (the CR before it dropped), at most max bytes.
func (r *reader) line(max int) ([]byte, error) {
	var out []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(out)+len(chunk) > max+2 {
			return nil, errLineTooLong
		}
		out = append(out, chunk...)
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull {
			return nil, unexpectedEOF(err)
		}
	}
	out = out[:len(out)-1]
	if n := len(out); n > 0 && out[n-1] == '\r' {
		out = out[:n-1]
	}
	return out, nil
}

func mapTooLong(err error, msg string) error {
	if errors.Is(err, errLineTooLong) {
		return protoErr("%s", msg)
	}
	return err
}

// unexpectedEOF: a connection closed inside a request is not a clean close.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseLen reads a frame's length: an optional '-' and decimal digits.
func parseLen(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// readInline reads an inline command: words split by spaces, "double
// quoted" with Redis's escapes (\n, \r, \t, \b, \a, \\, \", \xHH) or
// 'single quoted' (only \' escaped), as redis-cli's sdssplitargs does.
func (r *reader) readInline() ([][]byte, error) {
	max := r.lim.maxInline
	if r.lim.preAuth {
		max = min(max, preAuthMaxInline)
	}
	line, err := r.line(max)
	if err != nil {
		return nil, mapTooLong(err, "too big inline request")
	}
	if !r.acct.charge(len(line) + sliceOverhead) {
		return nil, errBudget
	}
	args, err := splitArgs(line)
	if err != nil {
		return nil, err
	}
	if len(args) > r.lim.maxArgs {
		return nil, protoErr("invalid multibulk length")
	}
	return args, nil
}

func splitArgs(line []byte) ([][]byte, error) {
	var args [][]byte
	p := bytes.TrimLeft(line, " \t")
	for len(p) > 0 {
		var arg []byte
		inDQ, inSQ, done := false, false, false
		for !done {
			switch {
			case inDQ:
				if len(p) == 0 {
					return nil, protoErr("unbalanced quotes in request")
				}
				if p[0] == '\\' && len(p) >= 4 && p[1] == 'x' && isHex(p[2]) && isHex(p[3]) {
					v, _ := strconv.ParseUint(string(p[2:4]), 16, 8)
					arg = append(arg, byte(v))
					p = p[4:]
					continue
				}
				if p[0] == '\\' && len(p) >= 2 {
					arg = append(arg, unescape(p[1]))
					p = p[2:]
					continue
				}
				if p[0] == '"' {
					if len(p) > 1 && p[1] != ' ' && p[1] != '\t' {
						return nil, protoErr("unbalanced quotes in request")
					}
					done = true
					p = p[1:]
					continue
				}
				arg = append(arg, p[0])
				p = p[1:]
			case inSQ:
				if len(p) == 0 {
					return nil, protoErr("unbalanced quotes in request")
				}
				if p[0] == '\\' && len(p) >= 2 && p[1] == '\'' {
					arg = append(arg, '\'')
					p = p[2:]
					continue
				}
				if p[0] == '\'' {
					if len(p) > 1 && p[1] != ' ' && p[1] != '\t' {
						return nil, protoErr("unbalanced quotes in request")
					}
					done = true
					p = p[1:]
					continue
				}
				arg = append(arg, p[0])
				p = p[1:]
			default:
				if len(p) == 0 || p[0] == ' ' || p[0] == '\t' {
					done = true
					continue
				}
				switch p[0] {
				case '"':
					inDQ = true
				case '\'':
					inSQ = true
				default:
					arg = append(arg, p[0])
				}
				p = p[1:]
			}
		}
		if arg == nil {
			arg = []byte{}
		}
		args = append(args, arg)
		p = bytes.TrimLeft(p, " \t")
	}
	return args, nil
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}
