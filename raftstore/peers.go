package raftstore

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/certs"
	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/storeapi"
)

// Who may speak on the Raft port, in two steps.
//
// In the TLS handshake (handshake) a peer proves a node id with its
// certificate, and a certificate the cluster recorded for a removed node is
// refused there, whoever presents it.
//
// After the preamble (Admit), Raft and forwarding are let through only
// from a node of this cluster: the preamble's cluster id must not be
// another cluster's, and with TLS the node must be a member of the current
// Raft configuration, or, on a node that has no configuration yet (it
// waits to be added, or to bootstrap), a voter of the cluster it learned
// from its peers (join.go). A certificate of a removed node, of a node
// nobody added, or of another cluster reaches nothing. Hello (hello.go, transport/hello.go) is
// answered to any node the CA vouches for.
//
// The configuration is cached (refreshed every members.every, and at once
// when an unknown id knocks, so a node an admin has just added is let in
// without waiting); the cache is read on raft's own dialling path, which
// must never wait for raft's main loop.
type members struct {
	s     *Store
	every time.Duration

	mu      sync.Mutex
	ids     map[string]string // id -> raft address; nil until raft reports a configuration
	removed map[string]map[command.Fingerprint]bool
	fetched time.Time

	// seen holds, by node id, the certificates that node was seen with
	// (newest last): a removal records them, so they are refused after.
	seenMu sync.Mutex
	seen   map[string][]command.Fingerprint

	rejected *prometheus.CounterVec

	connMu sync.Mutex
	conns  map[net.Conn]string // authenticated inbound connections -> the node they proved

	hosts atomic.Pointer[map[string]bool] // IPs of the members' Raft addresses
}

// Limits of members.seen: a node renews its certificate now and then, and
// only CA-signed ids get an entry.
const (
	maxSeenPerNode = 8
	maxSeenNodes   = 1024
)

func newMembers(s *Store) *members {
	m := &members{s: s, every: 250 * time.Millisecond, conns: map[net.Conn]string{},
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idemgate_peer_rejected_total",
			Help: "Connections refused on the Raft port (before any of their bytes were read), or closed when their node was removed, by reason.",
		}, []string{"reason"}), seen: map[string][]command.Fingerprint{}}
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
// loop may be busy), at most once per 50 ms, but at once while the cached
// configuration is empty: a node that has just bootstrapped or been added
// must not refuse its peers for a moment with a stale, empty cache.
func (m *members) refresh() {
	m.mu.Lock()
	select {
	case <-m.s.started:
	default:
		m.mu.Unlock()
		return // no raft yet: the cluster file's peers decide
	}
	if time.Since(m.fetched) < 50*time.Millisecond && len(m.ids) > 0 {
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
	removedNodes, _ := m.s.fsm.RemovedNodes()
	m.mu.Lock()
	m.ids = ids
	m.removed = fingerprintSets(removedNodes)
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

// MemberHost reports whether ip is the host of a member's Raft address
// (transport.Gate).
func (m *members) MemberHost(ip string) bool {
	h := m.hosts.Load()
	return h != nil && (*h)[ip]
}

// Track remembers an authenticated connection from node until it closes
// (transport.Gate).
func (m *members) Track(c net.Conn, node string) func() {
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
		m.Reject("removed_member")
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

// handshake is the TLS handshake's check of a peer (either end): a
// certificate recorded for a removed node is refused. Every other
// certificate is remembered for its node, so removing the node can record
// it.
func (m *members) handshake(id string, leaf *x509.Certificate) error {
	fp := command.Fingerprint(sha256.Sum256(leaf.Raw))
	m.mu.Lock()
	dead := m.removed[id][fp]
	m.mu.Unlock()
	if !dead {
		dead = m.s.join.removedCert(id, fp)
	}
	if dead {
		return &certs.PeerError{Reason: "removed_certificate",
			Err: fmt.Errorf("node %q was removed from the cluster and this certificate with it: a node added again needs a new certificate", id)}
	}
	m.seenMu.Lock()
	defer m.seenMu.Unlock()
	fps := m.seen[id]
	for _, f := range fps {
		if f == fp {
			return nil
		}
	}
	if fps == nil && len(m.seen) >= maxSeenNodes {
		return nil
	}
	if fps = append(fps, fp); len(fps) > maxSeenPerNode {
		fps = fps[1:]
	}
	m.seen[id] = fps
	return nil
}

// seenCerts returns the certificates node id was seen with.
func (m *members) seenCerts(id string) []command.Fingerprint {
	m.seenMu.Lock()
	defer m.seenMu.Unlock()
	return append([]command.Fingerprint(nil), m.seen[id]...)
}

// Admit decides whether a Raft or forwarding connection from node (the id
// its certificate proved; "" without TLS), whose dialler belongs to
// cluster, may go on (transport.Gate).
func (m *members) Admit(node string, cluster command.ClusterID) (reason string, err error) {
	select {
	case <-m.s.started:
	case <-m.s.closing:
		return "shutdown", storeapi.ErrShutdown
	}
	if mine := m.s.clusterID(); !mine.IsZero() && !cluster.IsZero() && mine != cluster {
		return "cluster_mismatch", fmt.Errorf("the peer belongs to cluster %s, this node to %s", cluster, mine)
	}
	for attempt := 0; attempt < 2; attempt++ {
		if attempt == 1 {
			m.refresh() // perhaps a node just added
		}
		m.mu.Lock()
		ids := m.ids
		_, member := ids[node]
		m.mu.Unlock()
		switch {
		case len(ids) > 0 && (member || m.s.cfg.PeerTLS == nil):
			return "", nil
		case len(ids) > 0:
			continue
		}
		// No configuration yet: this node waits to be added (or to
		// bootstrap). Only the voters of the cluster its peers named.
		if reason, err = m.s.join.admit(node, cluster, attempt == 1); err == nil {
			return "", nil
		}
	}
	if err != nil {
		return reason, err
	}
	return "not_member", fmt.Errorf("node %q is not a member of the cluster", node)
}

// fingerprintSets indexes removed nodes' certificates by node id.
func fingerprintSets(rs []fsm.RemovedNode) map[string]map[command.Fingerprint]bool {
	out := make(map[string]map[command.Fingerprint]bool, len(rs))
	for _, r := range rs {
		set := make(map[command.Fingerprint]bool, len(r.Fingerprints))
		for _, fp := range r.Fingerprints {
			set[fp] = true
		}
		out[r.ID] = set
	}
	return out
}

// memberList is ids as "n1, n2, n3", sorted.
func memberList(ids map[string]string) string {
	out := make([]string, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
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
	if len(m.ids) > 0 {
		return ""
	}
	// No configuration yet: the cluster this node waits for, or the file.
	if id := m.s.join.idAt(addr); id != "" {
		return id
	}
	for _, p := range m.s.cfg.Peers {
		if p.RaftAddr == addr {
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

// Reject counts a connection refused, or closed, under reason
// (transport.Gate).
func (m *members) Reject(reason string) { m.rejected.WithLabelValues(reason).Inc() }
