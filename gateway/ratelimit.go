package gateway

import (
	"sync"
	"time"
)

// ipLimiter is a token bucket per client address, for what the gateway
// listener gives anyone who asks (form tokens): one client cannot fill the
// store. It remembers at most max addresses; when full it forgets those
// whose bucket has refilled (they lose nothing by it).
type ipLimiter struct {
	rate, burst float64 // tokens per second, bucket size
	max         int

	mu sync.Mutex
	m  map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newIPLimiter(perSecond, burst float64, max int) *ipLimiter {
	return &ipLimiter{rate: perSecond, burst: burst, max: max, m: map[string]*bucket{}}
}

// allow takes one token from ip's bucket; false when it is empty.
func (l *ipLimiter) allow(ip string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.m[ip]
	if b == nil {
		if len(l.m) >= l.max {
			l.forgetFull(now)
			if len(l.m) >= l.max {
				return false // every remembered client is busy: refuse newcomers until some refill
			}
		}
		b = &bucket{tokens: l.burst, last: now}
		l.m[ip] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (l *ipLimiter) forgetFull(now time.Time) {
	full := time.Duration(l.burst / l.rate * float64(time.Second))
	for ip, b := range l.m {
		if now.Sub(b.last) >= full {
			delete(l.m, ip)
		}
	}
}
