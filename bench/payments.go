package bench

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Payments is the demo's payment service: every POST /pay… charges the user
// named by X-User-Id, does a few milliseconds of work, and now and then is
// as slow as the bank in the incident (11 s there, scaled down here).
type Payments struct {
	// Work is the usual time a charge takes; SlowEvery (1 in N) charges take
	// Slow instead. Set before Start.
	Work, Slow time.Duration
	SlowEvery  int
	// Ledger keeps every charge for Statement (the demo's reconciliation);
	// a load run leaves it off and keeps nothing per charge. Set before Start.
	Ledger bool

	srv      *fasthttp.Server
	ln       net.Listener
	mu       sync.Mutex
	charges  map[string]int
	pending  map[string]int // charges begun and not yet done, by user
	byKey    map[string]int
	ledger   [][3]string // charge id, user, idempotency key: each charge, in order
	total    atomic.Int64
	inFlight atomic.Int64
}

// NewPayments returns the demo's payment service with its defaults.
func NewPayments() *Payments {
	return &Payments{Work: 3 * time.Millisecond, Slow: 1100 * time.Millisecond, SlowEvery: 50,
		charges: map[string]int{}, pending: map[string]int{}, byKey: map[string]int{}}
}

// Start listens on a free loopback port.
func (p *Payments) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	p.ln = ln
	p.srv = &fasthttp.Server{Handler: p.handle, Name: "payments", ReadTimeout: 10 * time.Second}
	go p.srv.Serve(ln)
	return nil
}

// Addr is the service's host:port.
func (p *Payments) Addr() string { return p.ln.Addr().String() }

// Stop closes the service.
func (p *Payments) Stop() { p.srv.Shutdown() }

func (p *Payments) handle(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() || !strings.HasPrefix(string(ctx.Path()), "/pay") {
		ctx.SetStatusCode(fasthttp.StatusNotFound)
		return
	}
	p.inFlight.Add(1)
	defer p.inFlight.Add(-1)
	user := string(ctx.Request.Header.Peek("X-User-Id"))
	p.mu.Lock()
	p.pending[user]++ // a bank shows an authorization hold at once
	p.mu.Unlock()
	work := p.Work
	if p.SlowEvery > 0 && rand.IntN(p.SlowEvery) == 0 {
		work = p.Slow
	}
	if work > 0 {
		time.Sleep(work)
	}
	n := p.total.Add(1)
	p.mu.Lock()
	p.pending[user]--
	p.charges[user]++
	key := string(ctx.Request.Header.Peek("Idempotency-Key"))
	if key != "" {
		p.byKey[key]++
	}
	if p.Ledger {
		p.ledger = append(p.ledger, [3]string{fmt.Sprintf("ch_%d", n), user, key})
	}
	p.mu.Unlock()
	ctx.SetStatusCode(fasthttp.StatusCreated)
	ctx.SetContentType("application/json")
	fmt.Fprintf(ctx, `{"charge":"ch_%d","user":%q,"amount":%q,"status":"succeeded"}`, n, user, ctx.PostBody())
}

// Charges returns how many times each user was charged, and resets.
func (p *Payments) Charges() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.charges
	p.charges = map[string]int{}
	p.pending = map[string]int{}
	p.byKey = map[string]int{}
	p.ledger = nil
	p.total.Store(0)
	return out
}

// Statement writes the charges since the last reset as a provider's
// statement lists them: CSV with a header row (charge_id, user,
// idempotency_key), one charge per row, in the order they were made.
func (p *Payments) Statement(w io.Writer) error {
	if !p.Ledger {
		return errors.New("payments: no statement: Ledger was off")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	cw := csv.NewWriter(w)
	cw.Write([]string{"charge_id", "user", "idempotency_key"})
	for _, r := range p.ledger {
		cw.Write(r[:])
	}
	cw.Flush()
	return cw.Error()
}

// Charged reports whether user has been charged since the last reset, or
// has a charge under way: what an app asks the bank when a payment's
// outcome is unknown. A charge still being processed counts, as a bank's
// authorization hold does: answered "no" for a slow charge still running,
// the app paid again and the user was charged twice.
func (p *Payments) Charged(user string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.charges[user] > 0 || p.pending[user] > 0
}

// Executions returns how many times the service ran a request with this
// Idempotency-Key since the last reset.
func (p *Payments) Executions(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byKey[key]
}

// Quiesce waits (up to max) until no charge is in progress, so the charges
// of one run are not counted in the next.
func (p *Payments) Quiesce(max time.Duration) {
	deadline := time.Now().Add(max)
	for p.inFlight.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// Total is the number of charges since the last reset.
func (p *Payments) Total() int64 { return p.total.Load() }
