package api

// Fair locks: POST /v1/locks/{name}?ttl=10s&wait=5s acquires (waiting FIFO
// among waiters up to wait), POST /v1/locks/{name}/renew {"fence":N}
// renews, DELETE /v1/locks/{name}?fence=N releases, GET reads (package
// locks).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/locks"
)

// defaultLockTTL is an acquire's or a renew's lease without ?ttl=.
const defaultLockTTL = 10 * time.Second

// lockAnswer is an acquire's and a renew's answer.
type lockAnswer struct {
	Name      string `json:"name"`
	Fence     uint64 `json:"fence"`
	ExpiresAt string `json:"expires_at"`
	WaitedMS  *int64 `json:"waited_ms,omitempty"`
}

// lockState is GET's answer. The holder's fence is not shown: a fence
// is what releases the lock.
type lockState struct {
	Name       string `json:"name"`
	Held       bool   `json:"held"`
	AcquiredAt string `json:"acquired_at"`
	ExpiresAt  string `json:"expires_at"`
	Waiters    uint64 `json:"waiters"`
}

// lockPath reads /v1/locks/{name}[/renew]: the name as sent, after the
// method (a wrong one is 405 whatever the name).
func lockPath(ctx *fasthttp.RequestCtx, p []string) bool {
	if err := locks.CheckName(p[0]); err != nil {
		httpx.WriteProblem(ctx, httpx.InvalidLockName, "name: "+err.Error())
		return false
	}
	return true
}

// durationParam reads the query parameter name (a Go duration in [lo,
// hi], def when absent); false means it answered 400.
func durationParam(ctx *fasthttp.RequestCtx, name string, def, lo, hi time.Duration) (time.Duration, bool) {
	raw := string(ctx.QueryArgs().Peek(name))
	if raw == "" {
		return def, true
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < lo || d > hi || (lo == 0 && d < 0) {
		httpx.WriteProblem(ctx, httpx.InvalidTTL, fmt.Sprintf("%s: %q: want a Go duration from %s to %s (10s, 2m)", name, raw, lo, hi))
		return 0, false
	}
	return d, true
}

func (h *lockHandlers) lockAcquire(ctx *fasthttp.RequestCtx, name string) {
	ttl, ok := durationParam(ctx, "ttl", defaultLockTTL, time.Millisecond, locks.MaxTTL)
	if !ok {
		return
	}
	wait, ok := durationParam(ctx, "wait", 0, 0, locks.MaxWait)
	if !ok {
		return
	}
	// The wait, and the store's time to answer after it; a client that
	// goes away ends it at once, and its place in the queue with it.
	c, cancel := context.WithTimeout(context.Background(), wait+h.cfg.OpTimeout)
	defer cancel()
	if wait > 0 {
		stop := httpx.WatchClose(ctx.Conn(), cancel)
		defer stop()
	}
	held, err := h.locks.Acquire(c, name, ttl, wait)
	var locked *locks.LockedError
	switch {
	case errors.As(err, &locked):
		detail := "another holds the lock"
		if !locked.Until.IsZero() {
			detail += "; its lease expires at " + httpx.RFC3339(locked.Until)
		}
		if wait > 0 {
			detail += fmt.Sprintf(" (waited %s in its queue)", wait)
		}
		httpx.WriteProblem(ctx, httpx.Locked, detail)
		if !locked.Until.IsZero() {
			// Seconds until the holder's lease ends (rounded up, at
			// least 1): the lock is free then unless it renews.
			secs := max(1, int64((time.Until(locked.Until)+time.Second-1)/time.Second))
			ctx.Response.Header.Set("Retry-After", strconv.FormatInt(secs, 10))
		}
	case err != nil:
		writeLockError(ctx, err)
	default:
		ms := held.Waited.Milliseconds()
		httpx.WriteJSON(ctx, fasthttp.StatusCreated, lockAnswer{Name: name, Fence: held.Fence,
			ExpiresAt: httpx.RFC3339(held.ExpiresAt), WaitedMS: &ms})
	}
}

func (h *lockHandlers) lockRenew(ctx *fasthttp.RequestCtx, name string) {
	ttl, ok := durationParam(ctx, "ttl", defaultLockTTL, time.Millisecond, locks.MaxTTL)
	if !ok {
		return
	}
	req, ok := fenceBody(ctx, false)
	if !ok {
		return
	}
	end, ok := propose(h.base, ctx, func(c context.Context) (time.Time, error) {
		return h.locks.Renew(c, name, *req.Fence, ttl)
	}, writeLockError)
	if !ok {
		return
	}
	httpx.WriteJSON(ctx, fasthttp.StatusOK, lockAnswer{Name: name, Fence: *req.Fence, ExpiresAt: httpx.RFC3339(end)})
}

func (h *lockHandlers) lockRelease(ctx *fasthttp.RequestCtx, name string) {
	raw := string(ctx.QueryArgs().Peek("fence"))
	fence, err := strconv.ParseUint(raw, 10, 64)
	switch {
	case raw == "":
		httpx.WriteProblem(ctx, httpx.BadRequest, "fence: required (?fence=N, the fence the acquire answered)")
		return
	case err != nil || fence == 0:
		httpx.WriteProblem(ctx, httpx.BadRequest, fmt.Sprintf("fence: %q: want the positive integer the acquire answered", raw))
		return
	}
	if _, ok := propose(h.base, ctx, func(c context.Context) (struct{}, error) {
		return struct{}{}, h.locks.Release(c, name, fence)
	}, writeLockError); !ok {
		return
	}
	httpx.WriteJSON(ctx, fasthttp.StatusOK, map[string]any{"name": name, "released": true, "fence": fence})
}

func (h *lockHandlers) lockGet(ctx *fasthttp.RequestCtx, name string) {
	c, cancel := h.opCtx()
	defer cancel()
	l, err := h.locks.Get(c, name)
	if errors.Is(err, command.ErrNotFound) {
		httpx.WriteProblem(ctx, httpx.NotFound, "the lock is free (never taken, released, or its lease ran out with nobody waiting)")
		return
	}
	if err != nil {
		writeLockError(ctx, err)
		return
	}
	httpx.WriteJSON(ctx, fasthttp.StatusOK, lockState{Name: name, Held: true, AcquiredAt: httpx.RFC3339(nsTime(l.AcquiredAt)),
		ExpiresAt: httpx.RFC3339(nsTime(l.LeaseEnd)), Waiters: l.Waiters})
}

func writeLockError(ctx *fasthttp.RequestCtx, err error) {
	switch {
	case errors.Is(err, locks.ErrStaleFence):
		httpx.WriteProblem(ctx, httpx.StaleFence, err.Error())
	case errors.Is(err, locks.ErrQueueFull):
		httpx.WriteProblem(ctx, httpx.TooManyRequests, err.Error())
	case errors.Is(err, locks.ErrBadName):
		httpx.WriteProblem(ctx, httpx.InvalidLockName, "name: "+err.Error())
	case errors.Is(err, locks.ErrBadTTL), errors.Is(err, locks.ErrBadWait):
		httpx.WriteProblem(ctx, httpx.InvalidTTL, err.Error())
	case errors.Is(err, context.Canceled):
		// The client went away while it waited: nobody reads this.
		httpx.WriteProblem(ctx, httpx.Locked, "the client went away while it waited")
	default:
		httpx.WriteError(ctx, err)
	}
}

// routes are fair locks': read, acquire, release, renew. A wrong method is
// 405 whatever the name.
func (h *lockHandlers) routes() []resource {
	return []resource{
		{path: "/v1/locks/{name...}", check: lockPath, methodFirst: true, ops: []op{
			{method: "GET", id: "getLock", role: read, handle: with1(h.lockGet), doc: opDoc{
				summary:     "Read a lock",
				description: "Whether the lock is held, until when, and how many wait for it (linearizable).",
				params:      []string{"LockName"},
				answers: map[int]string{
					200: jsonAnswer("The lock is held.", "LockState"),
					400: "Problem400InvalidLockName",
					404: "Problem404NotFound",
				},
			}},
			{method: "POST", id: "acquireLock", role: app, handle: with1(h.lockAcquire),
				stores: []command.Type{command.TypeLockAcquire, command.TypeLockLeave}, doc: opDoc{
					summary:     "Acquire a lock, waiting FIFO",
					description: "201: yours, with a fence strictly higher than every earlier holder's (across releases, expiry and leader changes); pass the fence to what the lock protects, renew before the lease ends, release when done. With ?wait= the acquire queues behind the holder and earlier waiters and is granted in that order the moment the lock is freed (released, or its holder's lease ran out); 409 locked when the wait ran out first (or at once without one). A client that goes away while it waits leaves the queue. 429 when too many wait already.",
					params:      []string{"LockName", "LockTTL", "LockWait"},
					answers: map[int]string{
						201: jsonAnswer("Yours: the fence and the lease end.", "LockHeld"),
						400: "Problem400BadRequestInvalidLockNameInvalidTtl",
						409: "Problem409Locked",
						429: "Problem429TooManyRequests",
					},
				}},
			{method: "DELETE", id: "releaseLock", role: app, handle: with1(h.lockRelease),
				stores: []command.Type{command.TypeLockRelease}, doc: opDoc{
					summary:     "Release a lock by its fence",
					description: "Frees the lock the fence holds; the next waiter is granted it at once. 409 stale-fence when the fence does not hold it (released, its lease ran out).",
					params:      []string{"LockName", "LockFence", "IdempotencyKey"},
					answers: map[int]string{
						200: jsonAnswer("Released.", "LockReleased"),
						400: "Problem400BadRequestInvalidKeyInvalidLockName",
						409: "Problem409StaleFenceLock",
					},
				}},
		}},
		{path: "/v1/locks/{name...}/renew", check: lockPath, methodFirst: true, ops: []op{{method: "POST", id: "renewLock", role: app, handle: with1(h.lockRenew),
			stores: []command.Type{command.TypeLockRenew}, doc: opDoc{
				summary:     "Renew a lock's lease",
				description: "Extends the holder's lease to ?ttl= (10s) from now while it is live; 409 stale-fence once it was lost.",
				params:      []string{"LockName", "LockTTL", "IdempotencyKey"},
				body:        jsonRequest("The holder's fence.", "FenceRequest"),
				answers: map[int]string{
					200: jsonAnswer("The new lease end.", "LockHeld"),
					400: "Problem400BadRequestInvalidJsonInvalidKeyInvalidLockNameInvalidTtl",
					409: "Problem409StaleFenceLock",
				},
			}}}},
	}
}
