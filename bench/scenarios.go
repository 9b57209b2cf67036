package bench

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Target is an idemgate cluster to load.
type Target struct {
	Name     string   // in results: "idemgate" when empty
	Gateways []string // base URLs of the gateway listeners
	APIs     []string // base URLs of the API listeners
	Resps    []string // host:port of the Redis-protocol listeners (none: the resp scenario is skipped)
	PayPath  string   // an idempotent route ("/pay")
	PassPath string   // a path no route takes, for pass-through proxying
	// Executions, when the upstream is the bench's own, counts the upstream
	// executions of a key: the exactly-once checks use it.
	Executions func(key string) int
}

// Check validates the target's addresses: loopback only.
func (t Target) Check() error {
	for _, u := range append(append([]string(nil), t.Gateways...), t.APIs...) {
		if !isLoopbackURL(u) {
			return fmt.Errorf("bench: %s is not a loopback address; the bench only loads 127.0.0.0/8 and ::1", u)
		}
	}
	if len(t.Gateways) == 0 || len(t.APIs) == 0 {
		return fmt.Errorf("bench: a target needs gateway and API addresses")
	}
	return nil
}

var httpClient = &fasthttp.Client{
	MaxConnsPerHost: 2048,
	ReadTimeout:     10 * time.Second,
	WriteTimeout:    10 * time.Second,
	RetryIfErr:      func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
}

// stdClient, when set (UseStdHTTP(true)), makes every request of the bench, to
// idemgate and to the baselines alike, with Go's net/http client instead
// of fasthttp's: what most users' services run.
var stdClient *http.Client

// stdRequests counts the requests made with stdClient.
var stdRequests atomic.Int64

// StdRequests is how many requests went through Go's net/http client.
func StdRequests() int64 { return stdRequests.Load() }

// UseStdHTTP switches the bench's requests to Go's net/http client (or back
// to fasthttp's), kept alive with an idle connection per client (the
// default transport keeps two per host and would open a connection per
// request beyond them).
func UseStdHTTP(on bool) {
	if !on {
		stdClient = nil
		return
	}
	stdClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: time.Minute,
		TLSClientConfig: httpClient.TLSConfig,
	}}
}

// TrustCA makes the bench's client trust the CA in pem for https targets
// (a cluster with TLS).
func TrustCA(pem []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("bench: no CA certificate in the PEM given")
	}
	httpClient.TLSConfig = &tls.Config{RootCAs: pool}
	if stdClient != nil {
		stdClient.Transport.(*http.Transport).TLSClientConfig = httpClient.TLSConfig
	}
	return nil
}

// call makes one request and returns the status, the replay mark and the body.
func call(method, url, key string, body []byte, hdr ...string) (int, bool, []byte, error) {
	st, replayed, resp, err := exchange(method, url, key, "Idempotent-Replayed", body, hdr...)
	return st, replayed == "true", resp, err
}

// exchange makes one request and returns the status, the value of the
// answer's header peek and the body; hdr are request header name/value pairs.
func exchange(method, url, key, peek string, body []byte, hdr ...string) (int, string, []byte, error) {
	if stdClient != nil {
		return exchangeStd(method, url, key, peek, body, hdr...)
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	req.Header.SetMethod(method)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	req.SetBody(body)
	if err := httpClient.Do(req, resp); err != nil {
		return 0, "", nil, err
	}
	return resp.StatusCode(), string(resp.Header.Peek(peek)), append([]byte(nil), resp.Body()...), nil
}

// exchangeStd is exchange with Go's net/http client.
func exchangeStd(method, url, key, peek string, body []byte, hdr ...string) (int, string, []byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	stdRequests.Add(1)
	resp, err := stdClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", nil, err
	}
	return resp.StatusCode, resp.Header.Get(peek), b, nil
}

// callJSON is call for a POST to one of the API's JSON endpoints, which
// refuse a body not declared application/json.
func callJSON(url, key string, body []byte) (int, bool, []byte, error) {
	return call("POST", url, key, body, "Content-Type", "application/json")
}

var payBody = []byte(`{"amount":100,"currency":"eur"}`)

// orderBody is a first request's body: payBody's fields and an order
// number of its own, as two real payments differ. One body under every
// fresh key would make the gateway flag (and log) each first request as a
// suspected duplicate of the one before, which real traffic does not cost
// it. The pass-through baseline sends the same shape.
func orderBody(seq int64) []byte {
	b := strconv.AppendInt([]byte(`{"amount":100,"currency":"eur","order":`), seq, 10)
	return append(b, '}')
}

func runID() string { return fmt.Sprintf("%08x", rand.Uint32()) }

// Passthrough is the baseline of the gateway scenarios: the same request
// proxied without idempotency.
func Passthrough(t Target, cfg RunConfig) Stats {
	cfg.Name = "passthrough (baseline)"
	s := Run(cfg, func(c int, seq int64) error {
		st, _, _, err := call("POST", t.Gateways[c%len(t.Gateways)]+t.PassPath, "", orderBody(seq))
		return expect(st, err, 201)
	})
	s.Baseline = true
	return s
}

func expect(status int, err error, want ...int) error {
	if err != nil {
		return err
	}
	for _, w := range want {
		if status == w {
			return nil
		}
	}
	return fmt.Errorf("status %d, want %v", status, want)
}

// Unique sends first requests with fresh keys through the gateways.
func Unique(t Target, cfg RunConfig) Stats {
	id := runID()
	cfg.Name = "unique (first requests)"
	var issued atomicMax
	s := Run(cfg, func(c int, seq int64) error {
		issued.set(seq + 1)
		st, replayed, _, err := call("POST", t.Gateways[c%len(t.Gateways)]+t.PayPath, fmt.Sprintf("u-%s-%d", id, seq), orderBody(seq))
		if err == nil && replayed {
			return fmt.Errorf("a fresh key was answered as a replay")
		}
		return expect(st, err, 201)
	})
	if t.Executions != nil {
		twice := 0
		for seq := int64(0); seq < issued.get(); seq++ {
			if t.Executions(fmt.Sprintf("u-%s-%d", id, seq)) > 1 {
				twice++
			}
		}
		s.Check, s.CheckOK = fmt.Sprintf("%d keys executed twice", twice), twice == 0
	}
	return s
}

// Replay sends duplicates of completed keys.
func Replay(t Target, cfg RunConfig) Stats {
	id := runID()
	cfg.Name = "replay (completed keys)"
	const keys = 64
	for k := 0; k < keys; k++ {
		if st, _, _, err := call("POST", t.Gateways[k%len(t.Gateways)]+t.PayPath, fmt.Sprintf("r-%s-%d", id, k), payBody); expect(st, err, 201) != nil {
			return Stats{Name: cfg.Name, Skipped: fmt.Sprintf("could not complete the keys to replay: %v", expect(st, err, 201))}
		}
	}
	s := Run(cfg, func(c int, seq int64) error {
		st, replayed, _, err := call("POST", t.Gateways[c%len(t.Gateways)]+t.PayPath, fmt.Sprintf("r-%s-%d", id, seq%keys), payBody)
		if err == nil && st == 201 && !replayed {
			return fmt.Errorf("a completed key was not replayed")
		}
		return expect(st, err, 201)
	})
	if t.Executions != nil {
		bad := 0
		for k := 0; k < keys; k++ {
			if t.Executions(fmt.Sprintf("r-%s-%d", id, k)) != 1 {
				bad++
			}
		}
		s.Check, s.CheckOK = fmt.Sprintf("%d of %d keys not executed exactly once", bad, keys), bad == 0
	}
	return s
}

// HotKey is the contention case: every client on one key. Answers are the
// first, replays, or 409 while the first runs.
func HotKey(t Target, cfg RunConfig) Stats {
	key := "hot-" + runID()
	cfg.Name = "hotkey (one key)"
	s := Run(cfg, func(c int, _ int64) error {
		st, _, _, err := call("POST", t.Gateways[c%len(t.Gateways)]+t.PayPath, key, payBody)
		return expect(st, err, 201, 409)
	})
	if t.Executions != nil {
		n := t.Executions(key)
		s.Check, s.CheckOK = fmt.Sprintf("%d upstream executions of the hot key", n), n == 1
	}
	return s
}

// Tokens measures consuming form tokens (GETDEL) issued beforehand, and
// checks that of 8 consumers racing for each of 200 tokens exactly one wins,
// accounting for every consume (raceAll).
func Tokens(t Target, cfg RunConfig) Stats {
	cfg.Name = "tokens (consume)"
	pool := int64(20000)
	if cfg.Requests > 0 && cfg.Requests < pool {
		pool = cfg.Requests
	}
	toks, err := issueTokens(t, int(pool))
	if err != nil {
		return Stats{Name: cfg.Name, Skipped: err.Error()}
	}
	cfg.Requests = int64(len(toks))
	s := Run(cfg, func(c int, seq int64) error {
		st, _, _, err := callJSON(t.APIs[c%len(t.APIs)]+"/v1/tokens/consume", "", []byte(`{"scope":"bench","token":"`+toks[seq]+`"}`))
		return expect(st, err, 200)
	})
	// The race: exactly one of the consumers of each token wins.
	race, err := issueTokens(t, raceTokens)
	if err != nil {
		s.Check = err.Error()
		return s
	}
	s.Check, s.CheckOK = raceAll(t, race).verdict()
	return s
}

const (
	raceTokens    = 200
	raceConsumers = 8
	raceInFlight  = 128 // requests at once: 16 tokens' racers
)

// raceTally is what happened to every racing consume of every token.
type raceTally struct {
	what       string // the race, for the verdict: "200 tokens x 8 racing consumers"
	attempts   int    // consumes sent
	wins       []int  // per token
	refused    int
	settled    int // answers lost (an error, a 5xx) and learnt by a retry under the same key
	unsettled  int // still unknown when the retry budget ran out
	firstError string
}

// raceAll races raceConsumers consumes of each token, raceInFlight at
// a time. A consume whose answer is lost is retried under its
// Idempotency-Key until it gets one: the cluster applied it at most once,
// and the retry's answer is what really happened (a lost win is a win, not
// a refusal).
func raceAll(t Target, toks []string) *raceTally {
	id := runID()
	tally := &raceTally{wins: make([]int, len(toks)), attempts: len(toks) * raceConsumers,
		what: fmt.Sprintf("%d tokens x %d racing consumers", len(toks), raceConsumers)}
	var mu sync.Mutex
	sem := make(chan struct{}, raceInFlight)
	var wg sync.WaitGroup
	for i, tok := range toks {
		for r := 0; r < raceConsumers; r++ {
			wg.Add(1)
			sem <- struct{}{}
			go func(i, r int, tok string) {
				defer func() { <-sem; wg.Done() }()
				status, retried, lastErr := consumeSettled(t.APIs[(i+r)%len(t.APIs)], tok, fmt.Sprintf("race-%s-%d-%d", id, i, r))
				mu.Lock()
				defer mu.Unlock()
				tally.record(i, status, retried, lastErr)
			}(i, r, tok)
		}
	}
	wg.Wait()
	return tally
}

// consumeSettled consumes tok under key, retrying while the answer is not
// final (a transport error or a 5xx), for up to 30 s.
func consumeSettled(api, tok, key string) (status int, retried bool, lastErr string) {
	body := []byte(`{"scope":"bench","token":"` + tok + `"}`)
	deadline := time.Now().Add(30 * time.Second)
	for attempt := 0; ; attempt++ {
		st, _, resp, err := callJSON(api+"/v1/tokens/consume", key, body)
		if err == nil && (st == 200 || st == 409) {
			return st, attempt > 0, ""
		}
		if err != nil {
			lastErr = err.Error()
		} else {
			lastErr = fmt.Sprintf("status %d: %s", st, resp)
		}
		if err == nil && st < 500 {
			return st, attempt > 0, lastErr // a final answer the race does not expect
		}
		if time.Now().After(deadline) {
			return 0, attempt > 0, lastErr
		}
		time.Sleep(time.Duration(min(attempt+1, 10)) * 20 * time.Millisecond)
	}
}

// record counts one consume of token i: its final status (200 won, 409
// refused, anything else unsettled), whether a retry under the same key
// learnt it, and the last error seen.
func (r *raceTally) record(i, status int, retried bool, lastErr string) {
	switch status {
	case 200:
		r.wins[i]++
	case 409:
		r.refused++
	default:
		r.unsettled++
		if r.firstError == "" {
			r.firstError = lastErr
		}
	}
	if retried && (status == 200 || status == 409) {
		r.settled++
	}
}

func (r *raceTally) verdict() (string, bool) {
	won, bad := 0, []string{}
	for i, n := range r.wins {
		won += n
		if n != 1 && len(bad) < 5 {
			bad = append(bad, fmt.Sprintf("token %d won %d times", i, n))
		}
	}
	msg := fmt.Sprintf("%s: %d won, %d refused, %d lost answers settled by retrying under the same key, %d unsettled",
		r.what, won, r.refused, r.settled, r.unsettled)
	if len(bad) > 0 {
		msg += "; " + strings.Join(bad, ", ")
	}
	if r.unsettled > 0 {
		msg += "; last error: " + r.firstError
	}
	return msg, len(bad) == 0 && won == len(r.wins) && r.unsettled == 0 && won+r.refused == r.attempts
}

func issueTokens(t Target, n int) ([]string, error) {
	toks := make([]string, n)
	err := parallel(n, func(w, i int) error {
		st, _, body, err := callJSON(t.APIs[w%len(t.APIs)]+"/v1/tokens", "", []byte(`{"scope":"bench","ttl":"10m"}`))
		if err := expect(st, err, 201); err != nil {
			return err
		}
		var tok struct{ Token string }
		json.Unmarshal(body, &tok)
		toks[i] = tok.Token
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("issuing tokens: %w", err)
	}
	return toks, nil
}

// parallel calls f(w, i) for every i in [0, n) from 64 workers (w numbers
// the worker) and returns the first error; a worker stops at its first.
func parallel(n int, f func(w, i int) error) error {
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if err := f(w, int(i)); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	err, _ := firstErr.Load().(error)
	return err
}

// KV measures SETNX on fresh keys, then GETDEL of the keys it created,
// through the API; it checks that a second SETNX and a second GETDEL fail.
func KV(t Target, cfg RunConfig) []Stats {
	id := runID()
	cfg.Name = "kv SETNX"
	var created atomicMax
	setnx := Run(cfg, func(c int, seq int64) error {
		st, _, _, err := call("PUT", fmt.Sprintf("%s/v1/kv/k-%s-%d?nx=1", t.APIs[c%len(t.APIs)], id, seq), "", []byte("v"))
		if err == nil && st == 201 {
			created.set(seq + 1)
		}
		return expect(st, err, 201)
	})
	st, _, _, err := call("PUT", fmt.Sprintf("%s/v1/kv/k-%s-0?nx=1", t.APIs[0], id), "", []byte("w"))
	setnx.Check, setnx.CheckOK = fmt.Sprintf("SETNX on an existing key: %d", st), err == nil && st == 409
	cfg.Name = "kv GETDEL"
	cfg.Requests = created.get()
	getdel := Run(cfg, func(c int, seq int64) error {
		st, _, body, err := call("DELETE", fmt.Sprintf("%s/v1/kv/k-%s-%d", t.APIs[c%len(t.APIs)], id, seq), "", nil)
		if err == nil && st == 200 && string(body) != "v" {
			return fmt.Errorf("GETDEL returned %q", body)
		}
		return expect(st, err, 200, 404)
	})
	st, _, _, err = call("DELETE", fmt.Sprintf("%s/v1/kv/k-%s-0", t.APIs[1%len(t.APIs)], id), "", nil)
	getdel.Check, getdel.CheckOK = fmt.Sprintf("second GETDEL: %d", st), err == nil && st == 404
	return []Stats{setnx, getdel}
}

// Scenarios names the scenarios in their order. contention, flashsale and
// once run on the baselines too (once on etcd: Redis has none measured);
// resp is its own comparison with redis-server; the others run on
// idemgate, with the baselines' kv beside them.
var Scenarios = []string{"unique", "replay", "hotkey", "tokens", "kv", "contention", "flashsale", "once", "resp"}

// ParseScenarios parses "all" or a comma-separated list.
func ParseScenarios(s string) ([]string, error) {
	if s == "" || s == "all" {
		return Scenarios, nil
	}
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		ok := false
		for _, known := range Scenarios {
			ok = ok || name == known
		}
		if !ok {
			return nil, fmt.Errorf("unknown scenario %q (want %s or all)", name, strings.Join(Scenarios, ", "))
		}
		out = append(out, name)
	}
	return out, nil
}
