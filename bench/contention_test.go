package bench

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCheckHolds(t *testing.T) {
	ok, refused, unknown := releaseOK, releaseRefused, releaseUnknown
	tests := []struct {
		name       string
		holds      []lockHold
		violations int
		says       string
	}{
		{"one after another", []lockHold{
			{"a", 1, 10, 11, ok}, {"a", 2, 12, 14, ok}, {"b", 1, 13, 15, ok}, {"a", 3, 16, 17, ok},
		}, 0, ""},
		{"out of order in the history, in order by version", []lockHold{
			{"a", 3, 16, 17, ok}, {"a", 1, 10, 11, ok}, {"a", 2, 12, 14, ok},
		}, 0, ""},
		{"an overlap", []lockHold{
			{"a", 1, 10, 20, ok}, {"a", 2, 15, 25, ok},
		}, 1, "client 2 acquired a at 15 while client 1 held it [10, 20]"},
		{"acquired at the release's own version", []lockHold{
			{"a", 1, 10, 20, ok}, {"a", 2, 20, 25, ok},
		}, 1, "while client 1 held it"},
		{"a release refused", []lockHold{
			{"a", 1, 10, 0, refused},
		}, 1, "client 1's release of a (acquired at 10) was refused"},
		{"two holders at one version", []lockHold{
			{"a", 1, 10, 11, ok}, {"a", 2, 10, 12, ok},
		}, 1, "clients 1 and 2 both acquired a at 10"},
		{"released before acquired", []lockHold{
			{"a", 1, 10, 9, ok},
		}, 1, "released a at 9, not after its acquisition at 10"},
		{"an unknown release ends nothing the order check can use", []lockHold{
			{"a", 1, 10, 0, unknown}, {"a", 2, 40, 41, ok},
		}, 0, ""},
		{"no versions (Redis): releases decide", []lockHold{
			{"a", 1, 0, 0, ok}, {"a", 2, 0, 0, ok}, {"a", 3, 0, 0, refused},
		}, 1, "client 3's release of a"},
	}
	for _, tt := range tests {
		n, msgs := checkHolds(tt.holds)
		got := strings.Join(msgs, "; ")
		if n != tt.violations || !strings.Contains(got, tt.says) {
			t.Errorf("%s: checkHolds = %d, %q; want %d and %q", tt.name, n, got, tt.violations, tt.says)
		}
	}
}

// memLocks is an in-memory lock table with versions: a correct locker, or,
// when broken, one that grants every acquisition whoever holds the key.
type memLocks struct {
	mu      sync.Mutex
	version uint64
	held    map[string]uint64
	broken  bool
}

func (m *memLocks) acquire(_ int, key, _ string) (bool, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, taken := m.held[key]; taken && !m.broken {
		return false, 0, nil
	}
	m.version++
	m.held[key] = m.version
	return true, m.version, nil
}

func (m *memLocks) release(_ int, key, _ string, version uint64) (bool, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[key] != version && !m.broken {
		return false, 0, nil
	}
	delete(m.held, key)
	m.version++
	return true, m.version, nil
}

func (m *memLocks) close() {}

// memSystem is a System in memory, for the scenarios' own tests.
type memSystem struct {
	broken bool
	sold   *sync.Map // token -> consumed
}

func (s memSystem) System() string { return "mem" }
func (s memSystem) newLocker(int, time.Duration, time.Duration) (locker, error) {
	return &memLocks{held: map[string]uint64{}, broken: s.broken}, nil
}
func (s memSystem) newShop(int) (shop, error)                  { return s, nil }
func (s memSystem) newOncer(int, time.Duration) (oncer, error) { return nil, errNoOnce }
func (s memSystem) kv(RunConfig) []Stats                       { return nil }
func (s memSystem) serverPIDs() []int                          { return nil }
func (s memSystem) close()                                     {}
func (s memSystem) issue(n int) ([]string, error) {
	toks := make([]string, n)
	for i := range toks {
		toks[i] = fmt.Sprint(i)
	}
	return toks, nil
}
func (s memSystem) consume(_ int, tok, _ string) (int, bool, string) {
	time.Sleep(50 * time.Microsecond) // let consumers race
	if _, taken := s.sold.LoadOrStore(tok, true); taken && !s.broken {
		return 409, false, ""
	}
	return 200, false, ""
}

// TestContentionCatchesOverlaps runs the scenario on a correct lock table
// and on one that grants a held lock: the check passes on the first and
// fails on the second, so it can fail.
func TestContentionCatchesOverlaps(t *testing.T) {
	cfg := RunConfig{Clients: 16, Duration: 5 * time.Second, Requests: 1000}
	lc := DefaultLockConfig()
	lc.Keys, lc.Hold = 4, 200*time.Microsecond // holders overlap when the lock lets them
	good := Contention(memSystem{}, cfg, lc)
	if !good.CheckOK || good.Lock.Violations != 0 || good.Lock.Acquisitions == 0 || !good.Lock.Fencing {
		t.Fatalf("correct locks: check %v %q, %+v", good.CheckOK, good.Check, good.Lock)
	}
	if good.Lock.MinPerClient > good.Lock.MaxPerClient || good.Lock.MaxPerClient == 0 {
		t.Fatalf("fairness min %d max %d", good.Lock.MinPerClient, good.Lock.MaxPerClient)
	}
	// The hottest key has at least its share of the acquisitions and at
	// most all; the run's CPU was read.
	if l := good.Lock; l.HotKeyAcquisitions*int64(lc.Keys) < l.Acquisitions || l.HotKeyAcquisitions > l.Acquisitions || good.CPU == nil {
		t.Fatalf("hottest key %d of %d acquisitions over %d keys; CPU %+v", l.HotKeyAcquisitions, l.Acquisitions, lc.Keys, good.CPU)
	}
	bad := Contention(memSystem{broken: true}, cfg, lc)
	if bad.CheckOK || bad.Lock.Violations == 0 || !strings.Contains(bad.Check, "while client") {
		t.Fatalf("a lock granted twice: check %v %q", bad.CheckOK, bad.Check)
	}
}

// TestFlashSaleCatchesDoubleConsumes: the same for the flash sale.
func TestFlashSaleCatchesDoubleConsumes(t *testing.T) {
	cfg := RunConfig{Clients: 16, Duration: 5 * time.Second}
	good := FlashSale(memSystem{sold: &sync.Map{}}, cfg)
	if !good.CheckOK || good.Sale.Won != SaleTokens || good.Sale.Unsold != 0 {
		t.Fatalf("correct tokens: check %v %q, %+v", good.CheckOK, good.Check, good.Sale)
	}
	bad := FlashSale(memSystem{sold: &sync.Map{}, broken: true}, cfg)
	// Which tokens a broken store hands out twice depends on the race:
	// the check must name some.
	if bad.CheckOK || bad.Sale.Won <= SaleTokens || !regexp.MustCompile(`token \d+ won \d+ times`).MatchString(bad.Check) {
		t.Fatalf("tokens consumed twice: check %v %q", bad.CheckOK, bad.Check)
	}
}

func TestLockConfigValidate(t *testing.T) {
	ok := DefaultLockConfig()
	if err := ok.Validate(); err != nil {
		t.Fatalf("default: %v", err)
	}
	for _, tt := range []struct {
		change func(*LockConfig)
		says   string
	}{
		{func(c *LockConfig) { c.Keys = 0 }, "keys"},
		{func(c *LockConfig) { c.ZipfS = 1 }, "zipf-s"},
		{func(c *LockConfig) { c.ZipfS = 0.5 }, "zipf-s"},
		{func(c *LockConfig) { c.Hold = -time.Millisecond }, "hold"},
		{func(c *LockConfig) { c.Hold = 2 * MaxHold }, "hold"},
	} {
		c := ok
		tt.change(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), tt.says) {
			t.Errorf("Validate(%+v) = %v, want an error about %s", c, err, tt.says)
		}
	}
}
