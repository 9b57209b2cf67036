package bench

// The flash-sale scenario: a thousand one-shot tokens, every consumer
// racing for them, and a count of who won each.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// SaleTokens is how many tokens a flash sale issues; saleTimeout is the
// least time it is given to sell them.
const (
	SaleTokens  = 1000
	saleTimeout = 30 * time.Second
)

// SaleStats is what the flash-sale scenario adds to its Stats (whose Ops
// are consumes and P50-Max their latency).
type SaleStats struct {
	Tokens    int `json:"tokens"`
	Consumers int `json:"consumers"`
	Consumes  int `json:"consumes"`
	Won       int `json:"won"`
	Refused   int `json:"refused"`
	Unsettled int `json:"unsettled"`
	// Contended is how many tokens two or more consumers raced for at
	// once; MaxRacers the most on one token at once.
	Contended int `json:"contended_tokens"`
	MaxRacers int `json:"max_racers"`
	// SoldOutNS is how long the sale took until every token was gone (0:
	// the run's --duration ended first; Unsold says how many were left).
	SoldOutNS int64 `json:"sold_out_ns"`
	Unsold    int   `json:"unsold"`
	// MinWins and MaxWins are the fewest and most tokens one consumer won.
	MinWins int `json:"min_wins_per_consumer"`
	MaxWins int `json:"max_wins_per_consumer"`
}

// shop is one system's one-shot tokens, per consumer connection c.
type shop interface {
	issue(n int) ([]string, error)
	// consume spends tok for consumer c; key names this attempt, for a
	// system that settles a lost answer by retrying under it. status is
	// 200 (won), 409 (refused) or 0 (unknown: lastErr says why); retried
	// when a retry learnt the answer.
	consume(c int, tok, key string) (status int, retried bool, lastErr string)
	close()
}

// saleFloor is the shop window every consumer looks at: the first page of
// the unsold tokens, in the order they were issued. Each consumer picks a
// token of the page at random, so about four race for every token.
type saleFloor struct {
	mu     sync.Mutex
	unsold []int
	page   int
}

func newSaleFloor(tokens, consumers int) *saleFloor {
	f := &saleFloor{unsold: make([]int, tokens), page: max(1, consumers/4)}
	for i := range f.unsold {
		f.unsold[i] = i
	}
	return f
}

func (f *saleFloor) pick() (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.unsold) == 0 {
		return 0, false
	}
	return f.unsold[rand.IntN(min(f.page, len(f.unsold)))], true
}

// gone takes token i off the floor: a consumer learnt it is sold.
func (f *saleFloor) gone(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if at := slices.Index(f.unsold, i); at >= 0 {
		f.unsold = slices.Delete(f.unsold, at, at+1)
	}
}

func (f *saleFloor) left() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.unsold)
}

// FlashSale issues SaleTokens tokens on sys, then cfg.Clients consumers
// race to consume them until all are gone (or max(cfg.Duration, 30 s)
// ends); it
// checks that every token was won exactly once. A consume whose answer is
// lost is settled as the tokens race settles it (idemgate: a retry under
// the same Idempotency-Key; the baselines have no such thing).
func FlashSale(sys System, cfg RunConfig) Stats {
	name, baseline := resultName(sys, "flashsale")
	// The sale is bounded by its tokens; the time bound only guards
	// against a stuck system, so it never cuts a short run's sale.
	cfg.Name, cfg.Requests, cfg.Duration = name, 0, max(cfg.Duration, saleTimeout)
	sh, err := sys.newShop(cfg.Clients)
	if err != nil {
		return Stats{Name: name, Baseline: baseline, Skipped: err.Error()}
	}
	defer sh.close()
	toks, err := sh.issue(SaleTokens)
	if err != nil {
		return Stats{Name: name, Baseline: baseline, Skipped: err.Error()}
	}
	floor := newSaleFloor(len(toks), cfg.Clients)
	tally := &raceTally{wins: make([]int, len(toks))}
	ss := &SaleStats{Tokens: len(toks), Consumers: cfg.Clients}
	winsBy := make([]int, cfg.Clients)
	racing := make([]atomic.Int32, len(toks))
	contended := make([]bool, len(toks))
	var mu sync.Mutex
	id := runID()
	s := Run(cfg, func(c int, seq int64) error {
		i, ok := floor.pick()
		if !ok {
			return errStop
		}
		racers := int(racing[i].Add(1))
		status, retried, lastErr := sh.consume(c, toks[i], fmt.Sprintf("sale-%s-%d", id, seq))
		racing[i].Add(-1)
		floor.gone(i)
		mu.Lock()
		defer mu.Unlock()
		tally.attempts++
		tally.record(i, status, retried, lastErr)
		contended[i] = contended[i] || racers > 1
		ss.MaxRacers = max(ss.MaxRacers, racers)
		switch status {
		case 200:
			winsBy[c]++
		case 409:
		default:
			return errors.New(lastErr)
		}
		return nil
	})
	s.Baseline = baseline
	ss.Consumes, ss.Refused, ss.Unsettled = tally.attempts, tally.refused, tally.unsettled
	for i, w := range tally.wins {
		ss.Won += w
		if contended[i] {
			ss.Contended++
		}
	}
	ss.MinWins = math.MaxInt
	for _, w := range winsBy {
		ss.MinWins, ss.MaxWins = min(ss.MinWins, w), max(ss.MaxWins, w)
	}
	if ss.Unsold = floor.left(); ss.Unsold == 0 {
		ss.SoldOutNS = int64(s.Elapsed)
	}
	s.Sale = ss
	tally.what = fmt.Sprintf("%d tokens, %d consumers, %d consumes (%d tokens raced at once)", len(toks), cfg.Clients, tally.attempts, ss.Contended)
	s.Check, s.CheckOK = tally.verdict()
	if ss.Unsold > 0 {
		s.Check += fmt.Sprintf("; %d tokens unsold when the run ended after %v", ss.Unsold, s.Elapsed.Round(time.Millisecond))
	}
	return s
}

// apiShop is idemgate's form tokens through the API: POST /v1/tokens, and
// POST /v1/tokens/consume retried under its Idempotency-Key until it gets
// a final answer.
type apiShop struct{ t Target }

func (t Target) newShop(int) (shop, error) { return apiShop{t}, nil }

func (a apiShop) close() {}

func (a apiShop) issue(n int) ([]string, error) { return issueTokens(a.t, n) }

func (a apiShop) consume(c int, tok, key string) (int, bool, string) {
	return consumeSettled(a.t.APIs[c%len(a.t.APIs)], tok, key)
}
