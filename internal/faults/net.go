package faults

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Net is the directed links among a cluster's nodes, one proxy each.
type Net struct {
	mu      sync.Mutex
	targets map[string]string            // node id -> real Raft address
	links   map[string]map[string]*Proxy // from -> to -> proxy
}

// NewNet makes an empty network; Add each node's real address.
func NewNet() *Net {
	return &Net{targets: map[string]string{}, links: map[string]map[string]*Proxy{}}
}

// Add records a node's real Raft address.
func (n *Net) Add(id, raftAddr string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.targets[id] = raftAddr
}

// link returns (creating) the proxy for from -> to.
func (n *Net) link(from, to string) (*Proxy, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.links[from] == nil {
		n.links[from] = map[string]*Proxy{}
	}
	if p := n.links[from][to]; p != nil {
		return p, nil
	}
	target, ok := n.targets[to]
	if !ok {
		return nil, fmt.Errorf("faults: unknown node %q", to)
	}
	p, err := NewProxy(target)
	if err != nil {
		return nil, err
	}
	n.links[from][to] = p
	return p, nil
}

// Provider is the address provider of node from: its dials to a peer go
// through the proxy of that directed link.
func (n *Net) Provider(from string) raft.ServerAddressProvider { return provider{n: n, from: from} }

type provider struct {
	n    *Net
	from string
}

func (p provider) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	px, err := p.n.link(p.from, string(id))
	if err != nil {
		return "", err
	}
	return raft.ServerAddress(px.Addr()), nil
}

// Set sets the mode of the link from -> to.
func (n *Net) Set(from, to string, m Mode) error {
	p, err := n.link(from, to)
	if err != nil {
		return err
	}
	p.SetMode(m)
	return nil
}

// Delay sets the delay of the link from -> to.
func (n *Net) Delay(from, to string, d time.Duration) error {
	p, err := n.link(from, to)
	if err != nil {
		return err
	}
	p.SetDelay(d)
	return nil
}

// Isolate blackholes every link to and from id.
func (n *Net) Isolate(id string) error {
	var errs []error
	for other := range n.nodes() {
		if other != id {
			errs = append(errs, n.Set(id, other, Blackhole), n.Set(other, id, Blackhole))
		}
	}
	return errors.Join(errs...)
}

// Heal passes all traffic again, with no delay.
func (n *Net) Heal() {
	n.mu.Lock()
	var all []*Proxy
	for _, m := range n.links {
		for _, p := range m {
			all = append(all, p)
		}
	}
	n.mu.Unlock()
	for _, p := range all {
		p.SetDelay(0)
		p.SetMode(Pass)
	}
}

// Close stops every proxy.
func (n *Net) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, m := range n.links {
		for _, p := range m {
			p.Close()
		}
	}
}

func (n *Net) nodes() map[string]bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string]bool{}
	for id := range n.targets {
		out[id] = true
	}
	return out
}
