package gateway

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/httpx"
)

// The upstream: the one client the gateway calls it through, the one call
// both kinds of request make (send), and how a failed call is answered.

func newUpstream(cfg Config) (*fasthttp.HostClient, error) {
	u, err := url.Parse(cfg.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("gateway: upstream %q: want http://host:port", cfg.Upstream)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	return &fasthttp.HostClient{
		Dial:                      dialUpstream(3*time.Second, u.Scheme == "https"),
		Addr:                      addr,
		IsTLS:                     u.Scheme == "https",
		Name:                      "idemgate",
		MaxConns:                  cfg.UpstreamConns,
		MaxIdleConnDuration:       4 * time.Second, // shorter than common upstream idle timeouts: a stale pooled connection looks like "sent"
		ReadTimeout:               cfg.UpstreamTimeout,
		WriteTimeout:              cfg.UpstreamTimeout,
		MaxResponseBodySize:       cfg.MaxResponseBody,
		ReadBufferSize:            cfg.MaxResponseHeaderBytes,
		MaxIdemponentCallAttempts: 1,
		SecureErrorLogMessage:     true, // errors do not quote the upstream's header block
		// Never retry: a write retried silently is the double charge
		// idemgate exists to prevent; the client retries with its key.
		RetryIfErr:                    func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
		NoDefaultUserAgentHeader:      true,
	}, nil
}

// passthrough proxies a request without idempotency, adding X-Request-Id.
func (g *Gateway) passthrough(ctx *fasthttp.RequestCtx, rm *routeMetrics, start time.Time) {
	if len(ctx.Request.Header.Peek("X-Request-Id")) == 0 {
		ctx.Request.Header.Set("X-Request-Id", uuid.NewString())
	}
	if err := g.send(ctx, rm, nil, 0); err != nil {
		g.upstreamFailed(ctx, err)
		rm.done(outUpstreamError, start)
		return
	}
	rm.done(outPassthrough, start)
}

// staleRetries bounds the pooled connections one request may find closed by
// the upstream before it gives up (502, nothing sent): several idle
// connections can expire at once.
const staleRetries = 4

// send forwards ctx.Request, readied by toUpstream, and leaves the
// upstream's answer in ctx.Response, stripped of its hop-by-hop headers
// (fasthttp's reverse-proxy pattern: no copies); on an error ctx.Response
// is empty. key is an idempotent request's key (nil for a passthrough);
// timeout, when positive, bounds the call, else the upstream client's own
// timeouts do. A pooled connection that the upstream had closed is
// detected before anything is written (errStaleConn); the request then
// goes on another connection.
func (g *Gateway) send(ctx *fasthttp.RequestCtx, rm *routeMetrics, key []byte, timeout time.Duration) error {
	g.toUpstream(ctx, key)
	span := g.startUpstream(ctx)
	t0 := time.Now()
	var err error
	for attempt := 0; attempt <= staleRetries; attempt++ {
		if g.halted.Load() {
			err = errHalted
			break
		}
		if timeout > 0 {
			err = g.upstream.DoDeadline(&ctx.Request, &ctx.Response, t0.Add(timeout))
		} else {
			err = g.upstream.Do(&ctx.Request, &ctx.Response)
		}
		if !errors.Is(err, errStaleConn) {
			break
		}
	}
	rm.upstream.Observe(time.Since(t0).Seconds())
	endUpstream(span, &ctx.Response, err)
	if err != nil {
		ctx.Response.Reset()
		return err
	}
	stripResponseHopByHop(&ctx.Response.Header)
	return nil
}

// toUpstream readies ctx.Request for the upstream: hop-by-hop headers
// stripped; the client's address appended to X-Forwarded-For as one
// comma-separated line (a second line would let a client's forged first
// line be read as the whole header by Go's Header.Get and its kin);
// X-Forwarded-Proto set to the scheme the client used, whatever it sent;
// the upstream's scheme in the URI: it carries the one the client used,
// and HostClient refuses an https URI on a plain upstream
// (ErrHostClientRedirectToDifferentScheme) when the gateway serves TLS;
// and an idempotent request's key as its Idempotency-Key and X-Request-Id,
// set after the stripping, as the gateway's other headers are: a
// Connection header may not take away what the gateway sends. key must not
// alias the request's header: it is rewritten here.
func (g *Gateway) toUpstream(ctx *fasthttp.RequestCtx, key []byte) {
	h := &ctx.Request.Header
	proto := "http"
	if ctx.IsTLS() {
		proto = "https"
	}
	if g.upstream.IsTLS {
		ctx.Request.URI().SetScheme("https")
	} else {
		ctx.Request.URI().SetScheme("http")
	}
	stripHopByHop(h)
	var xff []byte
	for _, v := range h.PeekAll("X-Forwarded-For") {
		xff = append(append(xff, v...), ", "...)
	}
	h.Del("X-Forwarded-For") // Set would replace only the first line
	h.SetBytesV("X-Forwarded-For", append(xff, ctx.RemoteIP().String()...))
	h.Set("X-Forwarded-Proto", proto)
	if key != nil {
		h.SetBytesV("Idempotency-Key", key)
		h.SetBytesV("X-Request-Id", key)
	}
}

// nothingSent reports whether an upstream error means the request never
// left: the connection could not be made. Anything else (a timeout, a
// connection broken after writing) may have reached the upstream.
func nothingSent(err error) bool {
	if errors.Is(err, fasthttp.ErrDialTimeout) || errors.Is(err, fasthttp.ErrNoFreeConns) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, errStaleConn) || errors.Is(err, errHalted) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// responseTooLarge reports whether an upstream error means the upstream
// answered, after acting, with more than the gateway reads: headers over
// MaxResponseHeaderBytes, a body over MaxResponseBody.
func responseTooLarge(err error) bool {
	var small *fasthttp.ErrSmallBuffer
	return errors.As(err, &small) || errors.Is(err, fasthttp.ErrBodyTooLarge)
}

// upstreamFailure is the answer to a request whose upstream call failed:
// 502 when nothing was sent or the answer is too large to relay, 504 when
// the request may have been carried out; and what becomes of its key's
// record, for the log. Neither the answer nor the log line quotes
// fasthttp's error text: it can hold the upstream's headers (a malformed
// answer is quoted), and a 502 may be stored and replayed to every retry.
type upstreamFailure struct {
	kind          httpx.Kind
	detail        string
	class, record string
}

// failure is err's answer. It reads nothing of the request: a pass-through
// request answers it as a problem (upstreamFailed), an idempotent one as a
// problem about its key's record (request.own).
func (g *Gateway) failure(err error) upstreamFailure {
	f := upstreamFailure{class: upstreamErrorClass(err)}
	switch {
	case nothingSent(err):
		f.kind, f.record = httpx.UpstreamUnreachable, "released"
		f.detail = "the upstream could not be reached (" + f.class + "); nothing was sent"
	case responseTooLarge(err):
		f.kind, f.record = httpx.UpstreamResponseTooLarge, "completed"
		f.detail = fmt.Sprintf("the upstream answered with more than the gateway reads (headers over %d bytes, or a body over %d bytes): the request was carried out, but its answer cannot be relayed",
			g.cfg.MaxResponseHeaderBytes, g.cfg.MaxResponseBody)
	default:
		f.kind, f.record = httpx.UpstreamTimeout, "in_flight_until_processing_timeout"
		f.detail = "the upstream did not answer in time or the connection broke after the request was sent (" + f.class + ")"
	}
	return f
}

// logFailure logs a failed upstream call once, answered with status: the
// request's method and path, and who (a route's key and its record, or a
// pass-through).
func (g *Gateway) logFailure(f upstreamFailure, err error, status int, method, path string, who ...any) {
	attrs := append([]any{"status", status, "error_class", f.class, "method", method, "path", path}, who...)
	if text := httpx.NetErrorText(err); text != "" {
		attrs = append(attrs, "error", text)
	}
	g.logger.Warn("upstream failed", attrs...)
}

// upstreamFailed answers a pass-through request whose upstream call
// failed, and logs it.
func (g *Gateway) upstreamFailed(ctx *fasthttp.RequestCtx, err error) {
	f := g.failure(err)
	httpx.WriteProblem(ctx, f.kind, f.detail)
	g.logFailure(f, err, ctx.Response.StatusCode(), string(ctx.Method()), string(ctx.Path()), "passthrough", true)
}

// upstreamErrorClass names what went wrong with an upstream call, in words
// that never carry the upstream's bytes: for the problem detail, the log
// and whoever alerts on them.
func upstreamErrorClass(err error) string {
	var netErr net.Error
	var op *net.OpError
	switch {
	case errors.Is(err, errHalted):
		return "gateway halted"
	case errors.Is(err, fasthttp.ErrDialTimeout):
		return "connect timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		return "no free upstream connection"
	case errors.Is(err, errStaleConn):
		return "pooled connections closed by the upstream"
	case errors.As(err, &op) && op.Op == "dial":
		return "connect failed"
	case responseTooLarge(err):
		return "response too large"
	case errors.Is(err, fasthttp.ErrTLSHandshakeTimeout):
		return "TLS handshake timeout"
	case errors.Is(err, fasthttp.ErrTimeout), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection closed"
	}
	return "unexpected error" // a malformed answer, a TLS failure, ...
}
