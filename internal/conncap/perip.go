package conncap

import "sync"

// PerIP counts connections by client address against a limit. The zero
// value is unusable: use NewPerIP.
type PerIP struct {
	max int
	mu  sync.Mutex
	n   map[string]int // by address; an address at 0 has no entry
}

// NewPerIP returns a count that lets at most max connections of one
// address in at once (max must be positive).
func NewPerIP(max int) *PerIP {
	return &PerIP{max: max, n: map[string]int{}}
}

// Acquire counts one more connection of ip, or reports false, counting
// nothing, when ip already has Max.
func (p *PerIP) Acquire(ip string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n[ip] >= p.max {
		return false
	}
	p.n[ip]++
	return true
}

// Release gives back one connection of ip that Acquire counted.
func (p *PerIP) Release(ip string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n[ip]--; p.n[ip] <= 0 {
		delete(p.n, ip)
	}
}
