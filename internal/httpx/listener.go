package httpx

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/internal/conncap"
)

// Listener is a fasthttp server on one address; the API and the gateway
// listener embed it.
type Listener struct {
	name   string // for errors: "api listener", "gateway listener"
	logger *slog.Logger
	addr   string
	srv    *fasthttp.Server
	ln     net.Listener
	tls    *tls.Config
	// maxConnsPerIP caps each client address's connections (conncap);
	// 0: no cap.
	maxConnsPerIP int
}

// Limits are the protections a listener applies, so a slowloris or a huge
// body costs nothing; the API's and the gateway's configs embed them. Zero fields take
// fasthttp's defaults (Concurrency: 256k); MaxConnsPerIP 0 caps nothing.
type Limits struct {
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxRequestBody, MaxHeaderBytes         int
	MaxConnsPerIP, Concurrency             int
	// MaxBodyBuffer bounds the request-body bytes the listener holds at
	// once, all connections together (body.go); 0: 64 × MaxRequestBody.
	MaxBodyBuffer int
}

// DefaultLimits are every listener's limits a cluster file leaves out
// (limits: in the file): the gateway's, the API's and the Redis face's.
func DefaultLimits() Limits {
	return Limits{ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second,
		MaxRequestBody: 4 << 20, MaxHeaderBytes: 16 << 10, MaxConnsPerIP: 1024, Concurrency: 64 * 1024}
}

// NewListener builds the server: safe limits, no default Content-Type (a
// replay without one must stay without one), bodies streamed so a handler
// reads one only once it wants it, within a budget (body.go), problem
// documents for what fasthttp refuses before a handler runs, connections
// closed on shutdown.
func NewListener(name, addr string, h fasthttp.RequestHandler, l Limits, logger *slog.Logger) Listener {
	return Listener{name: name, addr: addr, logger: logger, maxConnsPerIP: l.MaxConnsPerIP, srv: &fasthttp.Server{
		Handler:              h,
		Name:                 serverName,
		ReadTimeout:          l.ReadTimeout,
		WriteTimeout:         l.WriteTimeout,
		IdleTimeout:          l.IdleTimeout,
		MaxRequestBodySize:   l.MaxRequestBody,
		ReadBufferSize:       l.MaxHeaderBytes,
		Concurrency:          l.Concurrency,
		NoDefaultContentType: true,
		StreamRequestBody:    true,
		// Never parse a multipart body before the handler has decided
		// who may send one (the API checks tokens first; the gateway
		// forwards bodies as they are).
		DisablePreParseMultipartForm: true,
		CloseOnShutdown:              true,
		// Errors do not quote the request's header block (refused.go
		// never shows their text, but fasthttp keeps them).
		SecureErrorLogMessage: true,
		ErrorHandler: func(ctx *fasthttp.RequestCtx, err error) {
			refuse(ctx, err, name, logger)
		},
		Logger: fasthttpLogger{logger: logger, listener: name},
	}}
}

// UseTLS makes the listener serve TLS with cfg (call it before Listen).
// The certificate comes from cfg's GetCertificate, so a reloaded one is
// used by the next handshake without a restart.
func (l *Listener) UseTLS(cfg *tls.Config) { l.tls = cfg }

// Listen binds the address.
func (l *Listener) Listen() error {
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		return fmt.Errorf("%s: %w", l.name, err)
	}
	ln = &retryListener{Listener: ln, name: l.name, logger: l.logger}
	if l.maxConnsPerIP > 0 {
		// Under TLS: a refused connection costs no handshake.
		r := &capRefusal{name: l.name, logger: l.logger, max: l.maxConnsPerIP, tls: l.tls != nil}
		ln = conncap.NewListener(ln, l.maxConnsPerIP, r.refuse)
	}
	if l.tls != nil {
		ln = tls.NewListener(ln, l.tls)
	}
	l.ln = ln
	return nil
}

// capRefusal answers a connection over the per-address cap with a 429
// problem (over TLS, whose handshake has not begun, it is closed without
// one) and logs it at most once a minute: a flood is one line.
type capRefusal struct {
	name   string
	logger *slog.Logger
	max    int
	tls    bool
	logged atomic.Int64 // unix ns of the last line
}

func (r *capRefusal) refuse(c net.Conn, ip string) {
	if now := time.Now().UnixNano(); now-r.logged.Load() > int64(time.Minute) {
		r.logged.Store(now)
		r.logger.Warn(r.name+": refusing connections of an address over max_conns_per_ip", "remote", ip, "max_conns_per_ip", r.max)
	}
	if r.tls {
		return
	}
	var resp fasthttp.Response
	resp.SetStatusCode(TooManyRequests.Status)
	resp.Header.SetContentType("application/problem+json")
	resp.Header.SetServer("idemgate")
	resp.SetConnectionClose()
	resp.SetBody(problemJSON(TooManyRequests, "too many connections from this address"))
	c.SetWriteDeadline(time.Now().Add(time.Second))
	resp.WriteTo(c)
}

// retryListener keeps accepting through a shortage of file descriptors
// (EMFILE, ENFILE) or a connection aborted before it was accepted: fasthttp's
// Serve returns on any accept error that is not a timeout, which would take
// the whole node down when a flood of connections uses up its descriptors.
type retryListener struct {
	net.Listener
	name   string
	logger *slog.Logger
}

func (l *retryListener) Accept() (net.Conn, error) {
	backoff := 5 * time.Millisecond
	for {
		c, err := l.Listener.Accept()
		if err == nil || !retryableAccept(err) {
			return c, err
		}
		if backoff == 5*time.Millisecond {
			l.logger.Warn(l.name+": accept failed; retrying", "error", err)
		}
		time.Sleep(backoff)
		if backoff < time.Second {
			backoff *= 2
		}
	}
}

func retryableAccept(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

// Scheme is "https" when the listener serves TLS, else "http".
func (l *Listener) Scheme() string {
	if l.tls != nil {
		return "https"
	}
	return "http"
}

// Addr is the bound address (after Listen).
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Serve serves until Shutdown.
func (l *Listener) Serve() error { return l.srv.Serve(l.ln) }

// Shutdown stops accepting and waits for requests in flight (or ctx).
func (l *Listener) Shutdown(ctx context.Context) error { return l.srv.ShutdownWithContext(ctx) }
