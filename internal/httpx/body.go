package httpx

import (
	"fmt"
	"io"
	"sync"

	"github.com/valyala/fasthttp"
)

// Request bodies. fasthttp reads a whole body before the handler runs
// unless the server streams bodies; then a body larger than what came with
// the headers reaches the handler as a stream. Both listeners stream, and
// read a body only once they want it (the API after the token check), into
// a budget of bytes held at once across all connections: without one, 400
// connections each sending 4 MiB made a node hold 1.7 GB, and connections
// times max_request_body is no bound worth the name.

// BodyBudget bounds the request-body bytes a listener holds at once.
type BodyBudget struct {
	mu        sync.Mutex
	used, max int
}

// NewBodyBudget holds max bytes; 0 means 64 bodies of perBody (fasthttp's
// default body limit when that is 0 too).
func NewBodyBudget(max, perBody int) *BodyBudget {
	if perBody <= 0 {
		perBody = fasthttp.DefaultMaxRequestBodySize
	}
	if max <= 0 {
		max = 64 * perBody
	}
	return &BodyBudget{max: max}
}

func (b *BodyBudget) take(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *BodyBudget) give(n int) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// ReadBody reads a streamed request body, up to limit, within budget. It
// returns the function that gives the bytes back (call it when the request
// is answered), or false when it answered: 413 for a body over limit, 503
// when the budget is spent (the client retries), 400 for a body that broke
// off. A body that came whole with the headers costs nothing here. A
// refusal closes the connection after a lingering read (linger.go), so a
// client still sending the body reads its answer instead of a reset; a
// body that broke off has nothing left to linger for.
func ReadBody(ctx *fasthttp.RequestCtx, limit int, budget *BodyBudget) (release func(), ok bool) {
	if !ctx.Request.IsBodyStream() {
		return func() {}, true
	}
	if limit <= 0 {
		limit = fasthttp.DefaultMaxRequestBodySize
	}
	release, r := readBody(ctx, limit, budget)
	if release != nil {
		return release, true
	}
	WriteProblem(ctx, r.kind, r.detail)
	if r.linger {
		closeAfterAnswer(ctx)
	} else {
		ctx.SetConnectionClose()
	}
	return nil, false
}

// bodyRefusal is why ReadBody refuses a body, and whether the client may
// still be sending it.
type bodyRefusal struct {
	kind   Kind
	detail string
	linger bool
}

func tooLarge(limit int) bodyRefusal {
	return bodyRefusal{BodyTooLarge, fmt.Sprintf("the request body is over the limit (%d bytes)", limit), true}
}

// readBody reads a streamed body into the request within limit and budget,
// and answers nothing: it returns the release ReadBody hands on, or nil and
// the refusal ReadBody answers.
func readBody(ctx *fasthttp.RequestCtx, limit int, budget *BodyBudget) (func(), bodyRefusal) {
	n := ctx.Request.Header.ContentLength()
	if n > limit {
		return nil, tooLarge(limit)
	}
	if n < 0 { // chunked: the size is known once read
		n = limit
	}
	if !budget.take(n) {
		return nil, bodyRefusal{Unavailable, "too many request bodies in flight on this node; retry", true}
	}
	buf := bodyBuffers.Get().(*[]byte)
	defer putBodyBuffer(buf)
	body, err := readUpTo(ctx.RequestBodyStream(), (*buf)[:0], limit+1)
	*buf = body
	switch {
	case err != nil:
		budget.give(n)
		// Not err's text: a bad trailer's is quoted in it (refused.go).
		r := classifyRefusal(err)
		return nil, bodyRefusal{kind: r.kind, detail: r.detail}
	case len(body) > limit:
		budget.give(n)
		return nil, tooLarge(limit)
	}
	ctx.Request.SetBody(body) // a copy: the buffer goes back to the pool
	return func() { budget.give(n) }, bodyRefusal{}
}

// bodyBuffers are the buffers ReadBody reads a streamed body into before
// the request takes a copy: io.ReadAll made a buffer (and a LimitReader)
// for every request, and the API's are a hundred bytes or so.
var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledBody is the largest buffer put back: a rare big body's is left
// to the collector rather than held by the pool.
const maxPooledBody = 64 << 10

func putBodyBuffer(b *[]byte) {
	if cap(*b) <= maxPooledBody {
		*b = (*b)[:0]
		bodyBuffers.Put(b)
	}
}

// readUpTo appends r's bytes to b until r ends (io.EOF, not an error) or
// max bytes are in b, as io.ReadAll of an io.LimitReader does.
func readUpTo(r io.Reader, b []byte, max int) ([]byte, error) {
	for len(b) < max {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // let append pick the next size
		}
		n, err := r.Read(b[len(b):min(cap(b), max)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}
