package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/storeapi"
	"github.com/idemgate/idemgate/tokens"
)

// idempotent serves a request on an idempotent route: key, tenant and
// fingerprint; the local replay
// fast path; the form token; one begin that either makes this request the
// owner or returns the record; the upstream call; complete; answer.
func (g *Gateway) idempotent(ctx *fasthttp.RequestCtx, t routed, start time.Time) {
	r, rm := t.r, t.r.metrics
	if name := r.hopByHopNamed(&ctx.Request.Header); name != "" {
		httpx.WriteProblem(ctx, httpx.BadRequest,
			"Connection names "+name+" as hop-by-hop, but this route reads it and the upstream must receive it")
		rm.done(outBadRequest, start)
		return
	}
	if g.untrustedTenant(ctx, r) {
		rm.done(outUntrustedTenant, start)
		return
	}
	var body *jsonNode // the JSON body, for a route that reads one
	if r.keyJSON != nil {
		if body = g.jsonBody(ctx, r, start); body == nil {
			return
		}
	}
	key, present, err := r.requestKey(ctx, body)
	if err == nil && present {
		err = r.checkFormat(key)
	}
	if err != nil {
		httpx.WriteProblem(ctx, httpx.InvalidKey, err.Error())
		rm.done(outInvalidKey, start)
		return
	}
	if !present {
		if r.requireKey {
			httpx.WriteProblem(ctx, httpx.MissingKey, "this route requires an idempotency key ("+r.keySource()+")")
			rm.done(outMissingKey, start)
			return
		}
		if g.spendToken(ctx, r, nil, nil, start) {
			g.passthrough(ctx, rm, start)
		}
		return
	}
	var tbuf [96]byte
	tenant, err := r.requestTenant(ctx, tbuf[:0])
	if err != nil {
		httpx.WriteProblem(ctx, httpx.BadRequest, err.Error())
		rm.done(outBadRequest, start)
		return
	}
	var kbuf [512]byte
	kbufKey := fsm.AppendRecordKey(kbuf[:0], r.scope, tenant, key)
	if len(kbufKey) > fsm.MaxStoredKeyLen {
		httpx.WriteProblem(ctx, httpx.BadRequest, fmt.Sprintf(
			"the tenant (%d bytes) and the idempotency key together are over the limit (%d bytes with the route's scope)", len(tenant), fsm.MaxStoredKeyLen))
		rm.done(outBadRequest, start)
		return
	}
	fpBody := ctx.PostBody()
	if r.fpJSON {
		if body == nil {
			if body = g.jsonBody(ctx, r, start); body == nil {
				return
			}
		}
		fpBody = canonicalJSON(nil, body, r.fpIgnore)
	}
	fp, digest := fingerprint(t.method, t.pathHead, t.pathTail, ctx.URI().QueryString(), fpBody)

	// Fast path: a completed record never changes until it expires, so any
	// node may replay it from its own state, without Raft.
	if e := g.cache.get(kbufKey, start.UnixNano()); e != nil {
		g.answerCompleted(ctx, r, kbufKey, e, &fp, start)
		return
	}
	// Past the cache the record key goes to the store, an interface, and
	// whatever it is given escapes: it gets memory of its own here, so the
	// replay above stays on the stack buffer and allocates nothing.
	rk := bytes.Clone(kbufKey)
	if rec, err := g.store.Record(context.Background(), rk, true); err == nil && rec.State == fsm.StateCompleted {
		g.answerCompleted(ctx, r, rk, g.cacheRecord(r, rk, rec), &fp, start)
		return
	}
	if r.token != tokenOff && !g.spendToken(ctx, r, rk, &fp, start) {
		return
	}
	g.begin(ctx, r, rk, key, tenant, fp, digest, start)
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
func (g *Gateway) jsonBody(ctx *fasthttp.RequestCtx, r *route, start time.Time) *jsonNode {
	n, err := parseJSONBody(ctx.PostBody())
	if err != nil {
		httpx.WriteProblem(ctx, httpx.InvalidJSON, err.Error()+" (this route reads its body as JSON)")
		r.metrics.done(outBadRequest, start)
		return nil
	}
	return n
}

// spendToken consumes the request's Form-Token when the route asks for one.
// It returns false when it has answered. A retry of a request whose token
// was spent gets that request's record, not token-used.
func (g *Gateway) spendToken(ctx *fasthttp.RequestCtx, r *route, rk []byte, fp *[32]byte, start time.Time) bool {
	if r.token == tokenOff {
		return true
	}
	tok := ctx.Request.Header.Peek("Form-Token")
	if len(tok) == 0 {
		if r.token == tokenOptional {
			return true
		}
		httpx.WriteProblem(ctx, httpx.MissingToken, "this route requires a Form-Token header (POST /_idem/tokens?scope="+r.scope+" issues one)")
		r.metrics.done(outMissingToken, start)
		return false
	}
	c, cancel := context.WithTimeout(context.Background(), g.cfg.OpTimeout)
	defer cancel()
	err := g.tokens.Consume(c, r.scope, string(tok))
	switch {
	case err == nil:
		return true
	case errors.Is(err, tokens.ErrBadToken):
		httpx.WriteProblem(ctx, httpx.InvalidToken, "Form-Token: "+err.Error())
		r.metrics.done(outBadRequest, start)
		return false
	case errors.Is(err, tokens.ErrUsed):
		if rk != nil {
			if rec, rerr := g.store.Record(c, rk, false); rerr == nil {
				g.answerExisting(ctx, r, rk, rec, fp, start)
				return false
			}
		}
		httpx.WriteProblem(ctx, httpx.TokenUsed, "the form token was already used, or is unknown or expired")
		r.metrics.done(outTokenUsed, start)
		return false
	}
	httpx.WriteError(ctx, err)
	r.metrics.done(outUnavailable, start)
	return false
}

// begin runs the begin command and acts on its answer. With on_in_flight:
// wait, a duplicate waits on this node for the owner to finish, and tries to
// become the owner itself if the owner released the key.
// fp and digest come by value: this slow path may let them escape, the
// replay path must not.
func (g *Gateway) begin(ctx *fasthttp.RequestCtx, r *route, rk, key, tenant []byte, fpv, digest [32]byte, start time.Time) {
	fp := &fpv
	rm := r.metrics
	deadline := start.Add(r.waitTimeout)
	req := fsm.BeginRequest{Key: rk, Fingerprint: fp[:], TTL: r.ttl, Timeout: r.processingTimeout,
		ReleaseUnknown: r.releaseUnknown}
	if g.cfg.SuspectWindow > 0 {
		req.DigestKey = fsm.DigestKey(r.scope, string(tenant), digest[:])
		req.Window = g.cfg.SuspectWindow
		req.RejectSuspect = r.rejectSuspect
	}
	for {
		c, cancel := context.WithTimeout(context.Background(), g.cfg.OpTimeout)
		res, err := g.store.Begin(c, req)
		cancel()
		if err != nil {
			httpx.WriteError(ctx, err)
			rm.done(outUnavailable, start)
			return
		}
		switch res.Code {
		case fsm.CodeSuspect:
			rm.suspected.Inc()
			g.logger.Warn("suspected duplicate refused", "route", r.name, "key", string(key), "earlier", string(recordKeyPart(res.Suspect)))
			httpx.WriteProblem(ctx, httpx.SuspectedDuplicate,
				"a request with the same body was made under another idempotency key moments ago")
			rm.done(outSuspected, start)
			return
		case fsm.CodeCreated:
			if res.Suspect != nil {
				rm.suspected.Inc()
				g.logger.Warn("suspected duplicate", "route", r.name, "key", string(key), "earlier", string(recordKeyPart(res.Suspect)))
			}
			g.own(ctx, r, rk, key, res.Fence, res.ExpiresAt, fp, start)
			return
		}
		rec := res.Record
		if rec.State != fsm.StateInFlight || !r.wait || !bytes.Equal(rec.Fingerprint, fp[:]) {
			g.answerExisting(ctx, r, rk, rec, fp, start)
			return
		}
		rm.waits.Inc()
		done, released := g.waitLocal(rk, deadline)
		switch {
		case done != nil:
			g.answerExisting(ctx, r, rk, done, fp, start)
			return
		case released && time.Now().Before(deadline):
			continue // the owner gave the key back: try to own it
		}
		setExpires(ctx, rec.ExpiresAt, func() {
			writeKeyProblem(ctx, httpx.InProgress, "a request with this key is still being processed; waited "+r.waitTimeout.String(), key)
		})
		rm.done(outInProgress, start)
		return
	}
}

// waitLocal waits on this node until the record under rk leaves the
// in-flight state (returned), disappears (released), or deadline passes.
func (g *Gateway) waitLocal(rk []byte, deadline time.Time) (rec *fsm.Record, released bool) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		changed := g.store.Changed()
		r, err := g.store.Record(context.Background(), rk, true)
		switch {
		case errors.Is(err, fsm.ErrNotFound):
			return nil, true
		case err == nil && r.State != fsm.StateInFlight:
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
func (g *Gateway) answerExisting(ctx *fasthttp.RequestCtx, r *route, rk []byte, rec *fsm.Record, fp *[32]byte, start time.Time) {
	rm := r.metrics
	if !bytes.Equal(rec.Fingerprint, fp[:]) {
		setExpires(ctx, rec.ExpiresAt, func() {
			writeKeyProblem(ctx, httpx.KeyReuse,
				"this idempotency key was used with another request (method, path, query or body differ)", recordKeyPart(rk))
		})
		rm.done(outKeyReuse, start)
		return
	}
	switch rec.State {
	case fsm.StateCompleted:
		g.answerCompleted(ctx, r, rk, g.cacheRecord(r, rk, rec), fp, start)
	case fsm.StateInFlight:
		setExpires(ctx, rec.ExpiresAt, func() {
			writeKeyProblem(ctx, httpx.InProgress, "a request with this key is still being processed; retry later", recordKeyPart(rk))
		})
		rm.done(outInProgress, start)
	default:
		setExpires(ctx, rec.ExpiresAt, func() {
			writeKeyProblem(ctx, httpx.OutcomeUnknown,
				"the first request with this key may or may not have been carried out (the upstream timed out); it is not retried", recordKeyPart(rk))
		})
		rm.done(outOutcomeUnknown, start)
	}
}

// cacheRecord caches a completed record read from the store, and says so
// in the log when its stored response failed its checksum.
func (g *Gateway) cacheRecord(r *route, rk []byte, rec *fsm.Record) *cached {
	e := newCached(rec)
	if e.damaged {
		g.logger.Error("stored response is damaged on this node (checksum mismatch): answering 409 replay-unavailable, not replaying it",
			"route", r.name, "key", string(recordKeyPart(rk)), "error", rec.Verify())
	}
	g.cache.put(rk, e)
	return e
}

// answerCompleted replays a completed record. This is the hot path of hot
// keys: it allocates nothing. A damaged record is answered as one whose
// body was not stored: never a wrong body, and the upstream is not called
// again (its first call happened). It is told before the fingerprint is
// compared: the checksum covers the fingerprint, which is no more to be
// trusted than the body.
func (g *Gateway) answerCompleted(ctx *fasthttp.RequestCtx, r *route, rk []byte, e *cached, fp *[32]byte, start time.Time) {
	var kind httpx.Kind
	var detail string
	var out outcome
	switch {
	case e.damaged:
		kind, out = httpx.ReplayUnavailable, outReplayUnavailable
		detail = "the stored response is damaged on this node (it fails its checksum); it is not replayed"
	case e.fingerprint != *fp:
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
		r.metrics.done(outReplayed, start)
		return
	}
	writeKeyProblem(ctx, kind, detail, recordKeyPart(rk))
	ctx.Response.Header.SetBytesV("Idempotency-Expires", e.expiresHdr)
	r.metrics.done(out, start)
}

// own forwards the request as the record's owner and completes the record.
func (g *Gateway) own(ctx *fasthttp.RequestCtx, r *route, rk, key []byte, fence uint64, expiresAt int64, fp *[32]byte, start time.Time) {
	rm := r.metrics
	k := append([]byte(nil), key...) // key may alias the header being rewritten
	// Set after hop-by-hop stripping, as toUpstream's own headers are: a
	// Connection header may not take away what the gateway sends.
	g.toUpstream(ctx)
	ctx.Request.Header.SetBytesV("Idempotency-Key", k)
	ctx.Request.Header.SetBytesV("X-Request-Id", k)
	timeout := min(r.processingTimeout, g.cfg.UpstreamTimeout)
	t0 := time.Now()
	err := g.doUpstream(&ctx.Request, &ctx.Response, t0.Add(timeout))
	rm.upstream.Observe(time.Since(t0).Seconds())
	if err != nil {
		ctx.Response.Reset()
		g.upstreamFailed(ctx, r, k, err)
		status := statusInProgress
		switch {
		case nothingSent(err):
			g.release(rk, fence)
			status = statusReleased
		case responseTooLarge(err):
			status = statusCreated
			// The upstream acted and answered; only its answer is lost.
			// The 502 is the record's answer (as Stripe stores a 5xx),
			// whatever release_statuses says: a retry gets it, and the
			// request never runs twice.
			g.complete(ctx, r, rk, key, fence, expiresAt, fp)
		}
		// Otherwise the record stays in flight until its processing
		// deadline; then its outcome is unknown (on_unknown decides).
		setExpires(ctx, expiresAt, nil)
		ctx.Response.Header.Set(statusHeader, status)
		rm.done(outUpstreamError, start)
		return
	}
	stripResponseHopByHop(&ctx.Response.Header)
	if r.releaseStatus[ctx.Response.StatusCode()] {
		g.release(rk, fence)
		ctx.Response.Header.Set(statusHeader, statusReleased)
		rm.done(outFirst, start)
		return
	}
	g.complete(ctx, r, rk, key, fence, expiresAt, fp)
	setExpires(ctx, expiresAt, nil)
	ctx.Response.Header.Set(statusHeader, statusCreated)
	rm.done(outFirst, start)
}

// complete stores the answer in ctx.Response as the record's, and caches it.
func (g *Gateway) complete(ctx *fasthttp.RequestCtx, r *route, rk, key []byte, fence uint64, expiresAt int64, fp *[32]byte) {
	status := ctx.Response.StatusCode()
	headers, refused := storedHeaders(&ctx.Response.Header, r.replayAllow, r.drop)
	if refused > 0 {
		g.logger.Warn("upstream header with CR, LF or NUL not stored", "route", r.name, "count", refused)
	}
	body := ctx.Response.Body()
	dropped := len(body) > r.maxStoredBody
	cr := fsm.CompleteRequest{Key: rk, Fence: fence, Status: status, Headers: headers, BodyDropped: dropped}
	if !dropped {
		cr.Body = body
	}
	c, cancel := context.WithTimeout(context.Background(), g.cfg.OpTimeout)
	err := throughElection(c, func(c context.Context) error { return g.store.Complete(c, cr) })
	cancel()
	if err == nil {
		// The record as it is now stored, cached through the one
		// constructor, which also sizes it for the cache's bound.
		stored := &fsm.Record{State: fsm.StateCompleted, Fingerprint: fp[:], Status: status,
			Headers: headers, BodyDropped: dropped, ExpiresAt: expiresAt}
		if !dropped {
			stored.Body = append([]byte(nil), body...)
		}
		g.cache.put(rk, newCached(stored))
	} else {
		// The upstream acted; its answer goes to the client. The record
		// stays in flight and turns unknown at its deadline.
		g.logger.Warn("complete failed; the record will become outcome-unknown", "route", r.name, "key", string(key), "error", err)
	}
}

func (g *Gateway) release(rk []byte, fence uint64) {
	c, cancel := context.WithTimeout(context.Background(), g.cfg.OpTimeout)
	defer cancel()
	if err := throughElection(c, func(c context.Context) error { return g.store.Release(c, rk, fence) }); err != nil {
		g.logger.Warn("release failed; the key frees at its processing deadline", "error", err)
	}
}

// setExpires runs write (which may reset the response) and then sets
// Idempotency-Expires.
func setExpires(ctx *fasthttp.RequestCtx, expiresAt int64, write func()) {
	if write != nil {
		write()
	}
	if expiresAt != 0 {
		ctx.Response.Header.SetBytesV("Idempotency-Expires", expiresHeader(expiresAt))
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
