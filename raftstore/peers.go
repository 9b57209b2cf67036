package raftstore

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Who may speak on the Raft port. With Config.PeerTLS a peer proves a node
// id with its certificate, and is accepted only if that node is a member of
// the current Raft configuration: a certificate of a removed node, or of a
// node nobody added, reaches nothing. The configuration is cached (refreshed
// every members.every, and at once when an unknown id knocks, so a node an
// admin has just added is let in without waiting); the cache is read on
// raft's own dialling path, which must never wait for raft's main loop.
type members struct {
	s     *Store
	every time.Duration

	mu      sync.Mutex
	ids     map[string]string // id -> raft address; nil until raft reports a configuration
	fetched time.Time

	rejected *prometheus.CounterVec

	connMu sync.Mutex
	conns  map[net.Conn]string // authenticated inbound connections -> the node they proved

	hosts atomic.Pointer[map[string]bool] // IPs of the members' Raft addresses
}

func newMembers(s *Store) *members {
	m := &members{s: s, every: 250 * time.Millisecond, conns: map[net.Conn]string{},
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idemgate_peer_rejected_total",
			Help: "Connections refused on the Raft port (before any of their bytes were read), or closed when their node was removed, by reason.",
		}, []string{"reason"})}
	for _, r := range rejectReasons {
		m.rejected.WithLabelValues(r) // at 0 from the start (metrics.go)
	}
	var peers []string
	for _, p := range s.cfg.Peers {
		peers = append(peers, p.RaftAddr)
	}
	m.setHosts(peers) // until raft reports a configuration
	return m
}

// refresh reads the latest configuration from raft (bounded: raft's main
// loop may be busy), at most once per 50 ms.
func (m *members) refresh() {
	m.mu.Lock()
	select {
	case <-m.s.started:
	default:
		m.mu.Unlock()
		return // no raft yet: the cluster file's peers decide
	}
	if time.Since(m.fetched) < 50*time.Millisecond {
		m.mu.Unlock()
		return
	}
	m.fetched = time.Now()
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	f := m.s.raft.GetConfiguration()
	if err := m.s.waitFuture(ctx, f); err != nil {
		return
	}
	ids := map[string]string{}
	for _, srv := range f.Configuration().Servers {
		ids[string(srv.ID)] = string(srv.Address)
	}
	m.mu.Lock()
	m.ids = ids
	m.mu.Unlock()
	m.dropRemoved(ids)
	var addrs []string
	for _, a := range ids {
		addrs = append(addrs, a)
	}
	m.setHosts(addrs)
}

// setHosts records the IPs of addrs (host:port; names are resolved, within
// a second).
func (m *members) setHosts(addrs []string) {
	hosts := map[string]bool{}
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			continue
		}
		if ip := net.ParseIP(host); ip != nil {
			hosts[ip.String()] = true
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		ips, _ := net.DefaultResolver.LookupHost(ctx, host)
		cancel()
		for _, ip := range ips {
			hosts[ip] = true
		}
	}
	m.hosts.Store(&hosts)
}

// memberHost reports whether ip is the host of a member's Raft address.
func (m *members) memberHost(ip string) bool {
	h := m.hosts.Load()
	return h != nil && (*h)[ip]
}

// track remembers an authenticated connection from node until it closes.
func (m *members) track(c net.Conn, node string) func() {
	m.connMu.Lock()
	m.conns[c] = node
	m.connMu.Unlock()
	return func() {
		m.connMu.Lock()
		delete(m.conns, c)
		m.connMu.Unlock()
	}
}

// dropRemoved closes the connections of nodes no longer in the
// configuration: the handshake let them in, and a removed node must not
// keep talking over a connection it opened before its removal.
func (m *members) dropRemoved(ids map[string]string) {
	if len(ids) == 0 {
		return
	}
	var drop []net.Conn
	m.connMu.Lock()
	for c, node := range m.conns {
		if _, ok := ids[node]; !ok {
			drop = append(drop, c)
		}
	}
	m.connMu.Unlock()
	for _, c := range drop {
		m.s.logger.Warn("closing a connection of a node that is no longer a member", "peer", c.RemoteAddr())
		m.reject("removed_member")
		c.Close()
	}
}

func (m *members) run(ctx context.Context) {
	t := time.NewTicker(m.every)
	defer t.Stop()
	for {
		m.refresh()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// allow decides whether node id may connect. Before raft has reported a
// configuration the cluster file's peers are the members (any node the CA
// vouches for, on a node started without peers to wait to be added); a node
// whose configuration is empty (it is being added) accepts any node the CA
// vouches for, since only a member can add it.
func (m *members) allow(id string) error {
	for attempt := 0; attempt < 2; attempt++ {
		if attempt == 1 {
			m.refresh() // perhaps a node just added
		}
		m.mu.Lock()
		ids := m.ids
		_, member := ids[id]
		m.mu.Unlock()
		switch {
		case member:
			return nil
		case ids == nil && len(m.s.cfg.Peers) == 0, ids != nil && len(ids) == 0:
			return nil
		case ids == nil:
			for _, p := range m.s.cfg.Peers {
				if p.ID == id {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("node %q is not a member of the cluster", id)
}

// idAt returns the member whose raft address is addr ("" if none is known):
// the id the dialled server must prove.
func (m *members) idAt(addr string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, a := range m.ids {
		if a == addr {
			return id
		}
	}
	for _, p := range m.s.cfg.Peers {
		if m.ids == nil && p.RaftAddr == addr {
			return p.ID
		}
	}
	return ""
}

// list returns the members' ids and raft addresses as last read (nil
// before raft reported a configuration).
func (m *members) list() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ids == nil {
		return nil
	}
	out := make(map[string]string, len(m.ids))
	for id, a := range m.ids {
		out[id] = a
	}
	return out
}

func (m *members) reject(reason string) { m.rejected.WithLabelValues(reason).Inc() }
