package httpx

// What fasthttp refuses before a handler runs (a malformed request, a
// header block or a body over the limit, a request not received in time) is
// answered with a fixed problem per kind, never with fasthttp's error text:
// that quotes the raw request, Authorization and cookies included, and a
// problem detail is shown, logged and kept by whoever receives it. The same
// holds for fasthttp's own log lines, which go to the node's logger.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/valyala/fasthttp"
)

// refusal is one kind of request fasthttp refuses, and its answer.
type refusal struct {
	kind   Kind
	detail string
}

var (
	refusedHeaderTooLarge = refusal{HeadersTooLarge, "request header too large"}
	refusedBodyTooLarge   = refusal{BodyTooLarge, "request body too large"}
	refusedTimeout        = refusal{RequestTimeout, "request timed out"}
	refusedMalformed      = refusal{BadRequest, "malformed request"}
)

// classifyRefusal tells the kind of a request fasthttp refused with err.
func classifyRefusal(err error) refusal {
	var small *fasthttp.ErrSmallBuffer
	var netErr net.Error
	switch {
	case errors.As(err, &small), errors.Is(err, fasthttp.ErrSmallReadBuffer):
		return refusedHeaderTooLarge
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return refusedBodyTooLarge
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return refusedTimeout
	}
	return refusedMalformed
}

// refuse answers a request fasthttp refused (its ErrorHandler) and logs it
// at debug: a client's mistake, or an attack, is no operator's event.
func refuse(ctx *fasthttp.RequestCtx, err error, listener string, logger *slog.Logger) {
	r := classifyRefusal(err)
	WriteProblem(ctx, r.kind, r.detail)
	ctx.SetConnectionClose()
	logger.Debug("request refused", "listener", listener, "status", r.kind.Status, "reason", r.detail,
		"remote", ctx.RemoteIP().String())
}

// fasthttpLogger is fasthttp's Logger (a server's accept and connection
// errors) over the node's slog logger. An error among the arguments is
// written as its kind, never as its text (see above); a network error's text
// (addresses, a system call's error) is kept.
type fasthttpLogger struct {
	logger   *slog.Logger
	listener string
}

func (l fasthttpLogger) Printf(format string, args ...any) {
	safe := make([]any, len(args))
	for i, a := range args {
		safe[i] = a
		if err, ok := a.(error); ok {
			safe[i] = safeErrorText(err)
		}
	}
	msg := fmt.Sprintf(format, safe...)
	// A connection's error is one client's doing; the rest (accept
	// errors, the connection limits) concern the operator.
	level := slog.LevelWarn
	if strings.HasPrefix(format, "error when serving connection") {
		level = slog.LevelDebug
	}
	l.logger.Log(context.Background(), level, msg, "listener", l.listener, "source", "fasthttp")
}

func safeErrorText(err error) string {
	if text := NetErrorText(err); text != "" {
		return text
	}
	return classifyRefusal(err).detail
}

// NetErrorText is err's text when it is a network error (addresses and a
// system call's error, never a byte of a message), else "".
func NetErrorText(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Error()
	}
	return ""
}
