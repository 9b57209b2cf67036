package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/storeapi"
	"github.com/idemgate/idemgate/tokens"
)

// request is one request on an idempotent route, from its key to its
// answer. idempotent runs it through its steps, in this order; each is a
// method of request but the replay, two lookups idempotent makes itself:
//
//	read        its key, tenant and fingerprint, and its record key (400 if one is bad)
//	replay      a completed record in this node's cache or state answers it, without Raft
//	spendToken  its form token, when the route takes one
//	begin       one store command: the request owns the key, or the record that holds it answers
//	own         the owner forwards the request to the upstream, and then either
//	complete    stores the upstream's answer as the record's, or
//	release     gives the key back (nothing was sent, or the route keeps no answer of that status)
//
// A request lives on its handler's stack, and a replay allocates nothing:
// no method lets the request escape, and nothing in it points into the
// stack. What goes to the store, an interface whose arguments escape, is a
// copy (the record key, the fingerprint).
type request struct {
	g     *Gateway
	ctx   *fasthttp.RequestCtx
	r     *route
	rm    *routeMetrics
	start time.Time
	// From read: the client's key (nil: none was sent), which may alias
	// the request's header until own copies it; the fingerprint of
	// method, path, query and body; the body's digest, for suspect
	// detection.
	key        []byte
	fp, digest [32]byte
	// Past the replay cache, in memory of their own: the record key (the
	// route's scope, the tenant, the key), and the key begin records the
	// body's digest under for suspect detection (nil: detection off).
	rk, digestKey []byte
	// From begin, when the request owns the key: the fence its complete
	// or release must hold, and when its record expires (unix
	// nanoseconds; 0: never).
	fence     uint64
	expiresAt int64
	// tc is the context of the request's span, the parent of its store
	// calls' contexts (trace.go); context.Background() when tracing is off.
	tc context.Context
}

// idempotent runs a request on an idempotent route through its steps. It
// returns true for a request without a key on a route that does not
// require one: its form token spent, it then passes through like a
// request no route takes.
func (g *Gateway) idempotent(ctx *fasthttp.RequestCtx, t routed, start time.Time) (pass bool) {
	q := request{g: g, ctx: ctx, r: t.r, rm: t.r.metrics, start: start, tc: g.traceContext(ctx)}
	var tbuf [96]byte  // the tenant and the record key, on the stack
	var kbuf [512]byte // until the request goes past the cache
	tenant, rk, ok := q.read(t, tbuf[:0], kbuf[:0])
	switch {
	case !ok:
		return false
	case q.key == nil:
		return q.spendToken()
	}
	q.traceRecord(rk)
	// Replay: a completed record never changes until it expires, so any
	// node may replay it from its own state, without Raft.
	if e := g.cache.get(rk, start.UnixNano()); e != nil {
		q.answerCompleted(e)
		return false
	}
	// Past the cache the record key goes to the store: it gets memory of
	// its own here, so the replay above stays on the stack buffers.
	q.rk = bytes.Clone(rk)
	if g.cfg.SuspectWindow > 0 {
		q.digestKey = command.DigestKey(q.r.scope, string(tenant), q.digest[:])
	}
	if rec, err := g.store.Record(q.tc, q.rk, true); err == nil && rec.State == command.StateCompleted {
		q.answerCompleted(q.cacheRecord(rec))
		return false
	}
	if q.spendToken() {
		q.begin()
	}
	return false
}

// read reads the request's key, tenant and fingerprint, and builds its
// record key; the tenant and the record key are appended to tbuf and kbuf.
// It returns false when it has answered: a header the route reads named
// hop-by-hop, a tenant header from a client that may not send one, a body
// that is not JSON where the route reads one, a bad or missing key or
// tenant, a record key over the limit. A request without a key on a route
// that does not require one leaves q.key nil.
func (q *request) read(t routed, tbuf, kbuf []byte) (tenant, rk []byte, ok bool) {
	ctx, r, rm := q.ctx, q.r, q.rm
	if name := r.hopByHopNamed(&ctx.Request.Header); name != "" {
		httpx.WriteProblem(ctx, httpx.BadRequest,
			"Connection names "+name+" as hop-by-hop, but this route reads it and the upstream must receive it")
		rm.done(outBadRequest, q.start)
		return nil, nil, false
	}
	if q.g.untrustedTenant(ctx, r) {
		rm.done(outUntrustedTenant, q.start)
		return nil, nil, false
	}
	var claimed []byte // the tenant from the bearer JWT
	if r.jwt {
		if claimed, ok = q.g.bearer(ctx, r, rm, q.start, tbuf); !ok {
			return nil, nil, false
		}
	}
	var body *jsonNode // the JSON body, for a route that reads one
	if r.keyJSON != nil {
		if body = q.jsonBody(); body == nil {
			return nil, nil, false
		}
	}
	key, present, err := r.requestKey(ctx, body)
	if err != nil {
		httpx.WriteProblem(ctx, httpx.InvalidKey, err.Error())
		rm.done(outInvalidKey, q.start)
		return nil, nil, false
	}
	if !present {
		if r.requireKey {
			httpx.WriteProblem(ctx, httpx.MissingKey, "this route requires an idempotency key ("+r.keySource()+")")
			rm.done(outMissingKey, q.start)
			return nil, nil, false
		}
		return nil, nil, true
	}
	if tenant, err = r.requestTenant(ctx, tbuf); err != nil {
		httpx.WriteProblem(ctx, httpx.BadRequest, err.Error())
		rm.done(outBadRequest, q.start)
		return nil, nil, false
	}
	if r.tenantClaim != "" {
		tenant = claimed
	}
	if rk = command.AppendRecordKey(kbuf, r.scope, tenant, key); len(rk) > command.MaxStoredKeyLen {
		httpx.WriteProblem(ctx, httpx.BadRequest, fmt.Sprintf(
			"the tenant (%d bytes) and the idempotency key together are over the limit (%d bytes with the route's scope)", len(tenant), command.MaxStoredKeyLen))
		rm.done(outBadRequest, q.start)
		return nil, nil, false
	}
	fpBody := ctx.PostBody()
	if r.fpJSON {
		if body == nil {
			if body = q.jsonBody(); body == nil {
				return nil, nil, false
			}
		}
		fpBody = canonicalJSON(nil, body, r.fpIgnore)
	}
	q.key = key
	q.fp, q.digest = fingerprint(t.method, t.pathHead, t.pathTail, ctx.URI().QueryString(), fpBody)
	return tenant, rk, true
}

func (r *route) keySource() string {
	switch {
	case r.keyJSON != nil:
		return "member /" + strings.Join(r.keyJSON, "/") + " of the JSON body"
	case r.keyQuery:
		return "query parameter " + r.keyName
	}
	return "header " + r.keyName
}

// jsonBody reads the request's body as JSON for a route that reads one,
// or answers 400 invalid-json and returns nil.
func (q *request) jsonBody() *jsonNode {
	n, err := parseJSONBody(q.ctx.PostBody())
	if err != nil {
		httpx.WriteProblem(q.ctx, httpx.InvalidJSON, err.Error()+" (this route reads its body as JSON)")
		q.rm.done(outBadRequest, q.start)
		return nil
	}
	return n
}

// spendToken consumes the request's Form-Token when the route asks for one.
// It returns false when it has answered. A retry of a request whose token
// was spent gets that request's record, not token-used.
func (q *request) spendToken() bool {
	ctx, r, rm := q.ctx, q.r, q.rm
	if r.token == tokenOff {
		return true
	}
	tok := ctx.Request.Header.Peek("Form-Token")
	if len(tok) == 0 {
		if r.token == tokenOptional {
			return true
		}
		httpx.WriteProblem(ctx, httpx.MissingToken, "this route requires a Form-Token header (POST /_idem/tokens?scope="+r.scope+" issues one)")
		rm.done(outMissingToken, q.start)
		return false
	}
	c, cancel := context.WithTimeout(q.tc, q.g.cfg.OpTimeout)
	defer cancel()
	err := q.g.tokens.Consume(c, r.scope, string(tok))
	switch {
	case err == nil:
		return true
	case errors.Is(err, tokens.ErrBadToken):
		httpx.WriteProblem(ctx, httpx.InvalidToken, "Form-Token: "+err.Error())
		rm.done(outBadRequest, q.start)
		return false
	case errors.Is(err, tokens.ErrUsed):
		if q.rk != nil {
			if rec, rerr := q.g.store.Record(c, q.rk, false); rerr == nil {
				q.answerExisting(rec)
				return false
			}
		}
		httpx.WriteProblem(ctx, httpx.TokenUsed, "the form token was already used, or is unknown or expired")
		rm.done(outTokenUsed, q.start)
		return false
	}
	httpx.WriteError(ctx, err)
	rm.done(outUnavailable, q.start)
	return false
}

// begin runs the begin command and acts on its answer. With on_in_flight:
// wait, a duplicate waits on this node for the owner to finish, and tries to
// become the owner itself if the owner released the key.
func (q *request) begin() {
	g, r, rm := q.g, q.r, q.rm
	deadline := q.start.Add(r.waitTimeout)
	req := command.BeginRequest{Key: q.rk, Fingerprint: bytes.Clone(q.fp[:]), TTL: r.ttl, Timeout: r.processingTimeout,
		ReleaseUnknown: r.releaseUnknown}
	if q.digestKey != nil {
		req.DigestKey = q.digestKey
		req.Window = g.cfg.SuspectWindow
		req.RejectSuspect = r.rejectSuspect
	}
	for {
		c, cancel := context.WithTimeout(q.tc, g.cfg.OpTimeout)
		res, err := g.store.Begin(c, req)
		cancel()
		if err != nil {
			httpx.WriteError(q.ctx, err)
			rm.done(outUnavailable, q.start)
			return
		}
		switch res.Code {
		case command.CodeSuspect:
			rm.suspected.Inc()
			g.logger.Warn("suspected duplicate refused", "route", r.name, "key", string(q.key), "earlier", string(recordKeyPart(res.Suspect)))
			httpx.WriteProblem(q.ctx, httpx.SuspectedDuplicate,
				"a request with the same body was made under another idempotency key moments ago")
			rm.done(outSuspected, q.start)
			return
		case command.CodeCreated:
			if res.Suspect != nil {
				rm.suspected.Inc()
				g.logger.Warn("suspected duplicate", "route", r.name, "key", string(q.key), "earlier", string(recordKeyPart(res.Suspect)))
			}
			q.fence, q.expiresAt = res.Fence, res.ExpiresAt
			q.own()
			return
		}
		rec := res.Record
		if rec.State != command.StateInFlight || !r.wait || !bytes.Equal(rec.Fingerprint, q.fp[:]) {
			q.answerExisting(rec)
			return
		}
		rm.waits.Inc()
		done, released := q.waitLocal(deadline)
		switch {
		case done != nil:
			q.answerExisting(done)
			return
		case released && time.Now().Before(deadline):
			continue // the owner gave the key back: try to own it
		}
		q.answerKeyProblem(httpx.InProgress, "a request with this key is still being processed; waited "+r.waitTimeout.String(), rec.ExpiresAt)
		rm.done(outInProgress, q.start)
		return
	}
}

// waitLocal waits on this node until the request's record leaves the
// in-flight state (returned), disappears (released), or deadline passes.
func (q *request) waitLocal(deadline time.Time) (rec *command.Record, released bool) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		changed := q.g.store.Changed()
		r, err := q.g.store.Record(q.tc, q.rk, true)
		switch {
		case errors.Is(err, command.ErrNotFound):
			return nil, true
		case err == nil && r.State != command.StateInFlight:
			return r, false
		}
		select {
		case <-changed:
		case <-t.C:
			return nil, false
		}
	}
}

// answerExisting answers from a record someone else owns or owned.
func (q *request) answerExisting(rec *command.Record) {
	rm := q.rm
	if !bytes.Equal(rec.Fingerprint, q.fp[:]) {
		q.answerKeyProblem(httpx.KeyReuse,
			"this idempotency key was used with another request (method, path, query or body differ)", rec.ExpiresAt)
		rm.done(outKeyReuse, q.start)
		return
	}
	switch rec.State {
	case command.StateCompleted:
		q.answerCompleted(q.cacheRecord(rec))
	case command.StateInFlight:
		q.answerKeyProblem(httpx.InProgress, "a request with this key is still being processed; retry later", rec.ExpiresAt)
		rm.done(outInProgress, q.start)
	default:
		q.answerKeyProblem(httpx.OutcomeUnknown,
			"the first request with this key may or may not have been carried out (the upstream timed out); it is not retried", rec.ExpiresAt)
		rm.done(outOutcomeUnknown, q.start)
	}
}

// cacheRecord caches a completed record read from the store, and says so
// in the log when its stored response failed its checksum.
func (q *request) cacheRecord(rec *command.Record) *cached {
	e := newCached(rec)
	if e.damage != nil {
		q.g.logger.Error("stored response is damaged on this node (checksum mismatch): answering 409 replay-unavailable, not replaying it",
			"route", q.r.name, "key", string(q.key), "error", e.damage)
	}
	q.g.cache.put(q.rk, e)
	return e
}

// answerCompleted replays a completed record. This is the hot path of hot
// keys: it allocates nothing. A damaged record is answered as one whose
// body was not stored: never a wrong body, and the upstream is not called
// again (its first call happened). It is told before the fingerprint is
// compared: the checksum covers the fingerprint, which is no more to be
// trusted than the body.
func (q *request) answerCompleted(e *cached) {
	ctx := q.ctx
	var kind httpx.Kind
	var detail string
	var out outcome
	switch {
	case e.damage != nil:
		kind, out = httpx.ReplayUnavailable, outReplayUnavailable
		detail = "the stored response is damaged on this node (it fails its checksum); it is not replayed"
	case e.fingerprint != q.fp:
		kind, out = httpx.KeyReuse, outKeyReuse
		detail = "this idempotency key was used with another request (method, path, query or body differ)"
	case e.bodyDropped:
		kind, out = httpx.ReplayUnavailable, outReplayUnavailable
		detail = "the first response was larger than this route stores; it was answered once and is not replayed"
	default:
		writeStored(&ctx.Response, e)
		ctx.Response.Header.Set("Idempotent-Replayed", "true")
		ctx.Response.Header.Set(statusHeader, statusReplayed)
		if e.expiresHdr != nil {
			ctx.Response.Header.SetBytesV("Idempotency-Expires", e.expiresHdr)
		}
		q.rm.done(outReplayed, q.start)
		return
	}
	writeKeyProblem(ctx, kind, detail, q.key)
	ctx.Response.Header.SetBytesV("Idempotency-Expires", e.expiresHdr)
	q.rm.done(out, q.start)
}

// writeStored writes a stored response: status, the stored headers, the
// body. The server adds its own Date and Content-Length.
func writeStored(resp *fasthttp.Response, e *cached) {
	resp.SetStatusCode(e.status)
	for _, h := range e.headers {
		resp.Header.AddBytesKV(h.Name, h.Value)
	}
	resp.SetBody(e.body)
}

// own forwards the request as its record's owner, then settles the record:
// complete with the upstream's answer, or release the key.
func (q *request) own() {
	ctx, rm := q.ctx, q.rm
	q.key = bytes.Clone(q.key) // it may alias the header toUpstream rewrites
	err := q.g.send(ctx, rm, q.key, min(q.r.processingTimeout, q.g.cfg.UpstreamTimeout))
	if err != nil {
		f := q.g.failure(err)
		writeKeyProblem(ctx, f.kind, f.detail, q.key)
		q.g.logFailure(f, err, ctx.Response.StatusCode(), string(ctx.Method()), string(ctx.Path()),
			"route", q.r.name, "scope", q.r.scope, "key", string(q.key), "record", f.record)
		status := statusInProgress
		switch {
		case nothingSent(err):
			q.release()
			status = statusReleased
		case responseTooLarge(err):
			status = statusCreated
			// The upstream acted and answered; only its answer is lost.
			// The 502 is the record's answer (as Stripe stores a 5xx),
			// whatever release_statuses says: a retry gets it, and the
			// request never runs twice.
			q.complete()
		}
		// Otherwise the record stays in flight until its processing
		// deadline; then its outcome is unknown (on_unknown decides).
		q.setExpires(q.expiresAt)
		ctx.Response.Header.Set(statusHeader, status)
		rm.done(outUpstreamError, q.start)
		return
	}
	if q.r.releaseStatus[ctx.Response.StatusCode()] {
		q.release()
		ctx.Response.Header.Set(statusHeader, statusReleased)
		rm.done(outFirst, q.start)
		return
	}
	q.complete()
	q.setExpires(q.expiresAt)
	ctx.Response.Header.Set(statusHeader, statusCreated)
	rm.done(outFirst, q.start)
}

// complete stores the answer in ctx.Response as the record's, and caches it.
func (q *request) complete() {
	g, r, resp := q.g, q.r, &q.ctx.Response
	status := resp.StatusCode()
	headers, refused := storedHeaders(&resp.Header, r.replayAllow, r.drop)
	if refused > 0 {
		g.logger.Warn("upstream header with CR, LF or NUL not stored", "route", r.name, "count", refused)
	}
	body := resp.Body()
	dropped := len(body) > r.maxStoredBody
	cr := command.CompleteRequest{Key: q.rk, Fence: q.fence, Status: status, Headers: headers, BodyDropped: dropped}
	if !dropped {
		cr.Body = body
	}
	c, cancel := context.WithTimeout(q.tc, g.cfg.OpTimeout)
	err := throughElection(c, func(c context.Context) error { return g.store.Complete(c, cr) })
	cancel()
	if err == nil {
		// The record as it is now stored, cached through the one
		// constructor, which also sizes it for the cache's bound.
		stored := &command.Record{State: command.StateCompleted, Fingerprint: bytes.Clone(q.fp[:]), Status: status,
			Headers: headers, BodyDropped: dropped, ExpiresAt: q.expiresAt}
		if !dropped {
			stored.Body = append([]byte(nil), body...)
		}
		g.cache.put(q.rk, newCached(stored))
	} else {
		// The upstream acted; its answer goes to the client. The record
		// stays in flight and turns unknown at its deadline.
		g.logger.Warn("complete failed; the record will become outcome-unknown", "route", r.name, "key", string(q.key), "error", err)
	}
}

// release gives the key back under the request's fence, so that a retry
// may own it.
func (q *request) release() {
	c, cancel := context.WithTimeout(q.tc, q.g.cfg.OpTimeout)
	defer cancel()
	if err := throughElection(c, func(c context.Context) error { return q.g.store.Release(c, q.rk, q.fence) }); err != nil {
		q.g.logger.Warn("release failed; the key frees at its processing deadline", "error", err)
	}
}

// answerKeyProblem answers with a problem about the request's record (its
// key, its Idempotency-Status) and when the record expires.
func (q *request) answerKeyProblem(k httpx.Kind, detail string, expiresAt int64) {
	writeKeyProblem(q.ctx, k, detail, q.key)
	q.setExpires(expiresAt)
}

// setExpires sets Idempotency-Expires, for a record that expires.
func (q *request) setExpires(expiresAt int64) {
	if expiresAt != 0 {
		q.ctx.Response.Header.SetBytesV("Idempotency-Expires", expiresHeader(expiresAt))
	}
}

// recordKeyPart returns the client's key from a record key.
func recordKeyPart(rk []byte) []byte {
	if i := bytes.LastIndexByte(rk, 0); i >= 0 {
		return rk[i+1:]
	}
	return rk
}

// throughElection runs op, the write that settles a record whose request
// the upstream has answered (complete, release), again while no leader is
// known, until ctx ends: the store answers "no leader" at once during an
// election, and giving up then would leave a charged payment in flight
// until its deadline, then outcome-unknown. Every attempt carries the
// same request id, so an attempt that committed unseen is not applied
// twice; that holds for an attempt answered "may or may not have been
// applied" (ErrTimeout before ctx ended) too.
func throughElection(ctx context.Context, op func(context.Context) error) error {
	ctx = storeapi.WithRequestID(ctx, storeapi.RequestID(ctx))
	for {
		err := op(ctx)
		if !errors.Is(err, storeapi.ErrNoLeader) && !errors.Is(err, storeapi.ErrNotLeader) && !errors.Is(err, storeapi.ErrTimeout) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}
