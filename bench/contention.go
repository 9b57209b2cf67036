package bench

// The hot-key contention scenario: clients take and give back locks on a
// few hot keys, and the history of who held what proves mutual exclusion.

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LockConfig shapes the contention scenario.
type LockConfig struct {
	Keys  int           // hot lock keys
	ZipfS float64       // skew of the key picked per cycle: must be > 1 (math/rand/v2's Zipf)
	Hold  time.Duration // how long a client holds a lock it took
	TTL   time.Duration // a lock's lifetime: what a crashed holder blocks others for
}

// DefaultLockConfig is the scenario: 16 keys, s = 1.1, no hold.
func DefaultLockConfig() LockConfig {
	return LockConfig{Keys: 16, ZipfS: 1.1, TTL: 30 * time.Second}
}

// MaxHold bounds LockConfig.Hold, far below the TTL: a lock must never
// expire under a holder that is still working, or a second holder would be
// the protocol's fault, not the system's.
const MaxHold = time.Second

// Validate names the field that is out of range.
func (lc LockConfig) Validate() error {
	switch {
	case lc.Keys < 1 || lc.Keys > 1_000_000:
		return fmt.Errorf("keys: %d, want 1-1000000", lc.Keys)
	case math.IsNaN(lc.ZipfS) || lc.ZipfS <= 1 || math.IsInf(lc.ZipfS, 0):
		return fmt.Errorf("zipf-s: %v, want a number > 1 (the Zipf distribution needs s > 1)", lc.ZipfS)
	case lc.Hold < 0 || lc.Hold > MaxHold:
		return fmt.Errorf("hold: %v, want 0-%v", lc.Hold, MaxHold)
	case lc.TTL < 10*MaxHold:
		return fmt.Errorf("lock ttl: %v, want at least %v", lc.TTL, 10*MaxHold)
	}
	return nil
}

// LockStats is what the contention scenario adds to its Stats (whose
// Ops are acquisitions and P50-Max the time from a cycle's first attempt
// to its acquisition).
type LockStats struct {
	Keys               int     `json:"keys"`
	ZipfS              float64 `json:"zipf_s"`
	HoldNS             int64   `json:"hold_ns"`
	Acquisitions       int64   `json:"acquisitions"`
	AcquisitionsPerSec float64 `json:"acquisitions_per_sec"`
	FailedAttempts     int64   `json:"failed_attempts"`
	FailedPerSec       float64 `json:"failed_attempts_per_sec"`
	// MinPerClient and MaxPerClient are the fewest and most acquisitions
	// one client made: fairness.
	MinPerClient int64 `json:"min_acquisitions_per_client"`
	MaxPerClient int64 `json:"max_acquisitions_per_client"`
	// Fencing: the system gave each acquisition and release a version
	// (idemgate, etcd), so the order check ran; Redis gives none, and only
	// the releases check it.
	Fencing    bool `json:"fencing"`
	Violations int  `json:"violations"`
	// UnknownReleases are releases whose answer was lost: the lock stayed
	// until its TTL, and the order check cannot use their end.
	UnknownReleases int `json:"unknown_releases"`
	// StillWaiting are the cycles the end of the run cut off before they
	// acquired: they are not in the time-to-acquire percentiles, which
	// understate the wait when this is large.
	StillWaiting int `json:"still_waiting"`
	// HotKeyAcquisitions are the acquisitions of the key acquired most:
	// the run's length over them is its time per hand-over, which with
	// its queue's length bounds the p99 of a FIFO lock.
	HotKeyAcquisitions int64 `json:"hot_key_acquisitions"`
}

// locker is one system's lock protocol, per client connection c.
type locker interface {
	// acquire tries once to take key with the value val: ok when taken,
	// with its fencing version (0 when the system has none).
	acquire(c int, key, val string) (ok bool, version uint64, err error)
	// release gives key back only if it is still held at version (or, with
	// no versions, by val): released is false when someone else held it;
	// relVersion is the release's own version (0 when none).
	release(c int, key, val string, version uint64) (released bool, relVersion uint64, err error)
	close()
}

// releaseOutcome is how a release ended.
type releaseOutcome int

const (
	releaseOK      releaseOutcome = iota
	releaseRefused                // the lock was no longer ours: a violation
	releaseUnknown                // the answer was lost
)

// lockHold is one acquisition of a lock and its release, as a client saw them.
type lockHold struct {
	key      string
	client   int
	acquired uint64 // fencing version of the acquisition; 0 when the system has none
	released uint64 // version of the release; 0 when none or unknown
	outcome  releaseOutcome
}

// checkHolds verifies mutual exclusion over a run's history: every release
// must succeed with the version (or value) that was acquired, and per key,
// in fencing-version order, each acquisition must come after the previous
// holder's release. It returns the number of violations and the first few,
// described.
func checkHolds(holds []lockHold) (int, []string) {
	n, msgs := 0, []string(nil)
	flag := func(format string, args ...any) {
		if n++; len(msgs) < 5 {
			msgs = append(msgs, fmt.Sprintf(format, args...))
		}
	}
	byKey := map[string][]lockHold{}
	for _, h := range holds {
		if h.outcome == releaseRefused {
			flag("client %d's release of %s (acquired at %d) was refused: someone else held it", h.client, h.key, h.acquired)
		}
		if h.outcome == releaseOK && h.released != 0 && h.released <= h.acquired {
			flag("client %d released %s at %d, not after its acquisition at %d", h.client, h.key, h.released, h.acquired)
		}
		if h.acquired != 0 {
			byKey[h.key] = append(byKey[h.key], h)
		}
	}
	for key, hs := range byKey {
		slices.SortFunc(hs, func(a, b lockHold) int { return cmpUint(a.acquired, b.acquired) })
		for i := 1; i < len(hs); i++ {
			prev, cur := hs[i-1], hs[i]
			switch {
			case cur.acquired == prev.acquired:
				flag("clients %d and %d both acquired %s at %d", prev.client, cur.client, key, cur.acquired)
			case prev.outcome == releaseOK && prev.released != 0 && cur.acquired <= prev.released:
				flag("client %d acquired %s at %d while client %d held it [%d, %d]",
					cur.client, key, cur.acquired, prev.client, prev.acquired, prev.released)
			}
		}
	}
	return n, msgs
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Contention runs cfg.Clients clients over lc.Keys hot keys on sys. A
// cycle picks a key (Zipf), tries to take its lock until it gets it (a
// refused attempt is retried at once, on the same key: every failure is
// load, the worst case), holds it lc.Hold, and releases it with a
// compare-and-delete on what it acquired. The history is checked for two
// holders at once.
func Contention(sys System, cfg RunConfig, lc LockConfig) Stats {
	name, baseline := resultName(sys, "contention")
	cfg.Name = name
	lk, err := sys.newLocker(cfg.Clients, lc.TTL, cfg.Duration)
	if err != nil {
		return Stats{Name: name, Baseline: baseline, Skipped: err.Error()}
	}
	defer lk.close()
	id := runID()
	keys := make([]string, lc.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("lock-%s-%d", id, i)
	}
	holds := make([][]lockHold, cfg.Clients)
	toAcquire := make([]Histogram, cfg.Clients)
	failed := make([]int64, cfg.Clients)
	waiting := make([]bool, cfg.Clients)
	pick := make([]*rand.Zipf, cfg.Clients)
	seed := rand.Uint64()
	for c := range pick {
		pick[c] = rand.NewZipf(rand.New(rand.NewPCG(seed, uint64(c))), lc.ZipfS, 1, uint64(lc.Keys-1))
	}
	deadline := time.Now().Add(cfg.Duration)
	cpu := startCPU(sys)
	s := Run(cfg, func(c int, seq int64) error {
		key := keys[pick[c].Uint64()]
		val := fmt.Sprintf("c%d-%d-%s", c, seq, id)
		t0 := time.Now()
		var version uint64
		for {
			ok, v, err := lk.acquire(c, key, val)
			if err != nil {
				return fmt.Errorf("acquire %s: %w", key, err)
			}
			if ok {
				version = v
				break
			}
			failed[c]++
			if time.Now().After(deadline) {
				waiting[c] = true
				return errStop
			}
		}
		toAcquire[c].Record(time.Since(t0))
		if lc.Hold > 0 {
			time.Sleep(lc.Hold)
		}
		h := lockHold{key: key, client: c, acquired: version}
		ok, rel, err := lk.release(c, key, val, version)
		switch {
		case err != nil:
			h.outcome = releaseUnknown
		case !ok:
			h.outcome = releaseRefused
		default:
			h.released = rel
		}
		holds[c] = append(holds[c], h)
		if err != nil {
			return fmt.Errorf("release %s: %w", key, err)
		}
		return nil
	})
	s.Baseline = baseline
	var all []lockHold
	var acq Histogram
	ls := &LockStats{Keys: lc.Keys, ZipfS: lc.ZipfS, HoldNS: int64(lc.Hold), MinPerClient: math.MaxInt64}
	for c := range holds {
		all = append(all, holds[c]...)
		acq.Merge(&toAcquire[c])
		ls.FailedAttempts += failed[c]
		if waiting[c] {
			ls.StillWaiting++
		}
		n := int64(len(holds[c]))
		ls.MinPerClient, ls.MaxPerClient = min(ls.MinPerClient, n), max(ls.MaxPerClient, n)
	}
	perKey := map[string]int64{}
	for _, h := range all {
		perKey[h.key]++
		ls.HotKeyAcquisitions = max(ls.HotKeyAcquisitions, perKey[h.key])
		ls.Fencing = ls.Fencing || h.acquired != 0
		if h.outcome == releaseUnknown {
			ls.UnknownReleases++
		}
	}
	secs := s.Elapsed.Seconds()
	ls.Acquisitions = int64(len(all))
	ls.AcquisitionsPerSec, ls.FailedPerSec = float64(ls.Acquisitions)/secs, float64(ls.FailedAttempts)/secs
	s.Ops, s.OpsPerSec = ls.Acquisitions, ls.AcquisitionsPerSec
	s.CPU = cpu.per(ls.Acquisitions)
	s.P50, s.P90, s.P99, s.Max = acq.Percentile(0.50), acq.Percentile(0.90), acq.Percentile(0.99), acq.Max()
	var msgs []string
	ls.Violations, msgs = checkHolds(all)
	s.Lock = ls
	how := "fencing versions in order, every release by compare-and-delete"
	if !ls.Fencing {
		how = "no fencing versions: every release by compare-and-delete on a random value"
	}
	s.Check = fmt.Sprintf("%d acquisitions of %d keys, %d overlapping holders (%s)", ls.Acquisitions, lc.Keys, ls.Violations, how)
	if len(msgs) > 0 {
		s.Check += ": " + strings.Join(msgs, "; ")
	}
	s.CheckOK = ls.Violations == 0 && ls.Acquisitions > 0
	return s
}

// fairLocker takes locks through idemgate's fair locks: an acquire waits
// in the lock's FIFO queue (up to maxLockWait, and never past the run's
// end) and is granted the moment the holder before it releases; its fence
// is the fencing version, and the release is by fence (409 stale-fence
// when the lock is no longer the caller's).
type fairLocker struct {
	apis     []string
	ttl      string
	deadline time.Time
}

// maxLockWait bounds one acquire's wait: below the bench client's timeout
// of a request.
const maxLockWait = 5 * time.Second

func (t Target) newLocker(_ int, ttl, run time.Duration) (locker, error) {
	return fairLocker{apis: t.APIs, ttl: ttl.String(), deadline: time.Now().Add(run)}, nil
}

func (l fairLocker) close() {}

func (l fairLocker) acquire(c int, key, _ string) (bool, uint64, error) {
	wait := min(maxLockWait, time.Until(l.deadline)).Truncate(time.Millisecond)
	q := "?ttl=" + l.ttl
	if wait > 0 {
		q += "&wait=" + wait.String()
	}
	st, _, resp, err := exchange("POST", l.apis[c%len(l.apis)]+"/v1/locks/"+key+q, "", "", nil)
	switch {
	case err != nil:
		return false, 0, err
	case st == 409:
		return false, 0, nil
	case st != 201:
		return false, 0, fmt.Errorf("acquire: status %d: %s", st, resp)
	}
	var ans struct {
		Fence uint64 `json:"fence"`
	}
	if err := json.Unmarshal(resp, &ans); err != nil || ans.Fence == 0 {
		return false, 0, fmt.Errorf("acquire: answer %s: %v", resp, err)
	}
	return true, ans.Fence, nil
}

// release frees the lock by its fence; a release makes no version of its
// own (0).
func (l fairLocker) release(c int, key, _ string, version uint64) (bool, uint64, error) {
	st, _, resp, err := exchange("DELETE", l.apis[c%len(l.apis)]+"/v1/locks/"+key+"?fence="+strconv.FormatUint(version, 10), "", "", nil)
	switch {
	case err != nil:
		return false, 0, err
	case st == 409:
		return false, 0, nil
	case st != 200:
		return false, 0, fmt.Errorf("release: status %d: %s", st, resp)
	}
	return true, 0, nil
}
