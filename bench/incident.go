package bench

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// IncidentConfig describes the night of the incident, replayed: users click
// "pay" two or three times, their clicks land on different nodes, the app
// retries a click that timed out (with the same idempotency key), and a node
// is killed partway through.
type IncidentConfig struct {
	Users int
	// Targets are base URLs ("http://127.0.0.1:8001"): the gateways, or the
	// payment service itself for a run without idemgate.
	Targets []string
	// Path is the payment route; WaitPath, if set, is a route with
	// on_in_flight: wait that every other user's clicks take.
	Path, WaitPath string
	// Concurrency is how many users click at once.
	Concurrency int
	// ClientTimeout is the app's patience for one click; after it, the app
	// retries the same payment.
	ClientTimeout time.Duration
	// Deadline bounds the whole run.
	Deadline time.Duration
	// Kill, if set, runs once when KillAt of the users are done; it returns
	// what it killed, for the report.
	KillAt float64
	Kill   func() string
	// Progress receives a live progress line; Charges reports the upstream's
	// charge count for it.
	Progress io.Writer
	Charges  func() int64
	// Reconcile, if set, is asked for a user whose payment ended with an
	// unknown outcome (or no answer at all) whether the user was charged,
	// as an app asks its bank; if not, the user pays again under a new
	// checkout key.
	Reconcile func(user string) bool
}

// IncidentResult is what the clients saw.
type IncidentResult struct {
	Users       int
	Requests    int64 // HTTP requests sent, retries included
	Replays     int64 // answers marked Idempotent-Replayed
	InProgress  int64 // 409 in-progress answers
	Timeouts    int64 // clicks the app gave up waiting for
	Unavailable int64 // 502/503/504 or a refused connection, retried
	Unknown     int64 // users left with 409 outcome-unknown
	Refused     int64 // definite 4xx answers (other than 409)
	Unanswered  int64 // users who never got a definite answer
	Reconciled  int64 // unknown or unanswered users checked with the bank
	PaidAgain   int64 // of those, users not charged who paid under a new key
	Killed      string
	Elapsed     time.Duration
	// Statuses counts the answers by HTTP status (0: no answer).
	Statuses map[int]int64
}

type incident struct {
	cfg      IncidentConfig
	client   *fasthttp.Client
	res      IncidentResult
	done     atomic.Int64
	stop     time.Time
	mu       sync.Mutex
	statuses map[int]int64
}

func (r *incident) count(status int) {
	r.mu.Lock()
	r.statuses[status]++
	r.mu.Unlock()
}

// RunIncident replays the incident against cfg.Targets.
func RunIncident(cfg IncidentConfig) (IncidentResult, error) {
	if cfg.Users <= 0 || len(cfg.Targets) == 0 || cfg.Path == "" {
		return IncidentResult{}, errors.New("bench: incident needs users, targets and a path")
	}
	for _, t := range cfg.Targets {
		if !isLoopbackURL(t) {
			return IncidentResult{}, fmt.Errorf("bench: target %s is not a loopback address", t)
		}
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 128
	}
	if cfg.ClientTimeout <= 0 {
		cfg.ClientTimeout = 500 * time.Millisecond
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = 2 * time.Minute
	}
	r := &incident{cfg: cfg, stop: time.Now().Add(cfg.Deadline), statuses: map[int]int64{}}
	r.res.Users = cfg.Users
	r.client = &fasthttp.Client{
		MaxConnsPerHost: 4 * cfg.Concurrency,
		ReadTimeout:     cfg.ClientTimeout,
		WriteTimeout:    cfg.ClientTimeout,
		RetryIfErr:      func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
	}
	start := time.Now()
	progressDone, progressExited := make(chan struct{}), make(chan struct{})
	go func() { defer close(progressExited); r.progress(progressDone) }()
	users := make(chan int)
	var wg sync.WaitGroup
	var killOnce sync.Once
	var killed sync.WaitGroup // the kill runs beside the users; its name is part of the result
	for w := 0; w < cfg.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range users {
				r.user(u)
				if n := r.done.Add(1); cfg.Kill != nil && float64(n) >= cfg.KillAt*float64(cfg.Users) {
					killOnce.Do(func() {
						killed.Add(1)
						go func() { defer killed.Done(); r.res.Killed = cfg.Kill() }()
					})
				}
			}
		}()
	}
	for u := 0; u < cfg.Users; u++ {
		users <- u
	}
	close(users)
	wg.Wait()
	killed.Wait()
	close(progressDone)
	<-progressExited
	r.res.Elapsed = time.Since(start)
	r.res.Statuses = r.statuses
	return r.res, nil
}

func (r *incident) progress(done <-chan struct{}) {
	if r.cfg.Progress == nil {
		return
	}
	// On a terminal the line is rewritten in place; elsewhere (CI logs) a
	// line is printed every two seconds.
	tty := isTerminal(r.cfg.Progress)
	every, eol := 2*time.Second, "\n"
	if tty {
		every, eol = 200*time.Millisecond, ""
	}
	t := time.NewTicker(every)
	defer t.Stop()
	print := func() {
		if tty {
			fmt.Fprint(r.cfg.Progress, "\r")
		}
		charges := int64(0)
		if r.cfg.Charges != nil {
			charges = r.cfg.Charges()
		}
		fmt.Fprintf(r.cfg.Progress, "  users %5d/%d  requests %6d  charges %5d  replays %5d  409s %4d  timeouts %4d %s",
			r.done.Load(), r.cfg.Users, atomic.LoadInt64(&r.res.Requests), charges,
			atomic.LoadInt64(&r.res.Replays), atomic.LoadInt64(&r.res.InProgress), atomic.LoadInt64(&r.res.Timeouts), eol)
	}
	for {
		select {
		case <-done:
			print()
			if tty {
				fmt.Fprintln(r.cfg.Progress)
			}
			return
		case <-t.C:
			print()
		}
	}
}

// user is one customer paying once: two or three clicks on "pay" in quick
// succession, all with the checkout's one idempotency key.
func (r *incident) user(u int) {
	user := fmt.Sprintf("user-%04d", u)
	path := r.cfg.Path
	if r.cfg.WaitPath != "" && u%2 == 1 {
		path = r.cfg.WaitPath
	}
	if r.checkout(user, path, 2+rand.IntN(2)) || r.cfg.Reconcile == nil {
		return
	}
	// The outcome is unknown: ask the bank, and pay again if nothing was
	// charged (a new checkout, so a new key).
	atomic.AddInt64(&r.res.Reconciled, 1)
	if !r.cfg.Reconcile(user) {
		atomic.AddInt64(&r.res.PaidAgain, 1)
		r.checkout(user, path, 1)
	}
}

// checkout is one payment attempt: clicks on "pay" in quick succession, all
// with the checkout's one idempotency key. It reports whether any click got
// a definite answer.
func (r *incident) checkout(user, path string, clicks int) bool {
	key := fmt.Sprintf("checkout-%s-%08x", user, rand.Uint32())
	outcomes := make(chan clickOutcome, clicks)
	for c := 0; c < clicks; c++ {
		go func(c int) {
			if c > 0 { // a double click, then an impatient third
				time.Sleep(time.Duration(20+rand.IntN(200*c)) * time.Millisecond)
			}
			outcomes <- r.click(key, user, path)
		}(c)
	}
	answered, unknown := false, false
	for c := 0; c < clicks; c++ {
		switch <-outcomes {
		case clickAnswered:
			answered = true
		case clickUnknown:
			unknown = true
		}
	}
	switch {
	case answered:
		return true
	case unknown:
		atomic.AddInt64(&r.res.Unknown, 1)
	default:
		atomic.AddInt64(&r.res.Unanswered, 1)
	}
	return false
}

type clickOutcome int

const (
	clickAnswered clickOutcome = iota
	clickUnknown
	clickGaveUp
)

// click sends one click and retries it, as the app does, until it gets a
// definite answer: on a timeout, a 409 in-progress, or an unavailable node.
func (r *incident) click(key, user, path string) clickOutcome {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for attempt := 0; attempt < 100 && time.Now().Before(r.stop); attempt++ {
		target := r.cfg.Targets[rand.IntN(len(r.cfg.Targets))]
		req.Reset()
		req.SetRequestURI(target + path)
		req.Header.SetMethod("POST")
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("X-User-Id", user)
		req.Header.SetContentType("application/json")
		req.SetBodyString(`{"amount":"49.00","currency":"CNY"}`)
		atomic.AddInt64(&r.res.Requests, 1)
		err := r.client.DoTimeout(req, resp, r.cfg.ClientTimeout)
		if err != nil {
			r.count(0)
		} else {
			r.count(resp.StatusCode())
		}
		switch {
		case errors.Is(err, fasthttp.ErrTimeout):
			atomic.AddInt64(&r.res.Timeouts, 1)
			continue // the app retries the payment at once
		case err != nil:
			atomic.AddInt64(&r.res.Unavailable, 1)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		switch resp.StatusCode() {
		case 200, 201:
			if string(resp.Header.Peek("Idempotent-Replayed")) == "true" {
				atomic.AddInt64(&r.res.Replays, 1)
			}
			return clickAnswered
		case 409:
			body := resp.Body()
			if strings.Contains(string(body), "outcome-unknown") {
				return clickUnknown
			}
			atomic.AddInt64(&r.res.InProgress, 1)
			time.Sleep(100 * time.Millisecond)
		case 400, 401, 403, 404, 405, 413, 422:
			atomic.AddInt64(&r.res.Refused, 1)
			return clickGaveUp // a definite refusal: the app shows an error
		default:
			atomic.AddInt64(&r.res.Unavailable, 1)
			time.Sleep(100 * time.Millisecond)
		}
	}
	return clickGaveUp
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// isLoopbackURL reports whether a base URL names a loopback host.
func isLoopbackURL(u string) bool {
	host := strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	host = strings.Trim(host, "[]")
	return host == "localhost" || host == "::1" || strings.HasPrefix(host, "127.")
}
