package raftstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/raftstore/transport"
	"github.com/idemgate/idemgate/storeapi"
)

// Every node asks each other member for its status once a second
// (transport.Status, on a connection of its own so a dead peer never delays
// forwarding to the leader): whether it answers, when it last did, how far
// its log reaches and its own Raft state. hashicorp/raft keeps the leader's
// replication state private; like Consul's autopilot, we ask the servers.
// The view serves GET /v1/cluster, the removal quorum check, promotion and
// the peer metrics.

// probeEvery is the period of the status probes.
const probeEvery = time.Second

// PeerStatus is what a node knows of a member from its probes.
type PeerStatus struct {
	ID        string `json:"id"`
	Reachable bool   `json:"reachable"`
	// LastContactMS: milliseconds since the peer last answered; -1: never.
	LastContactMS int64 `json:"last_contact_ms"`
	// MatchIndex is the peer's last log index, as it last reported it.
	MatchIndex uint64 `json:"match_index"`
	// Lag is how far MatchIndex was behind this node's last log index when
	// that answer came: both taken at one moment, so a member that keeps up
	// under load shows a few entries, not a probe period's worth.
	Lag uint64 `json:"lag"`
	// State is the peer's own Raft state as it last reported it,
	// "unreachable" when its last probe failed, or "unknown" before its
	// first probe has been answered or failed.
	State string `json:"state"`
}

// stateUnknown is a member's state before this node's first probe of it
// has been answered or failed (a member added a moment ago).
const stateUnknown = "unknown"

type peerProbe struct {
	addr      string    // the member's Raft address when its prober started
	contact   time.Time // last answer; zero: never
	ok        bool      // the last probe was answered
	lost      bool      // logged unreachable, not yet reachable again
	lastIndex uint64
	viewLast  uint64 // this node's last log index when that answer came
	tried     bool   // a probe was answered or failed
	state     string
	applied   [4]appliedAt // the last answers' applied indexes, newest at next-1
	next      int
	client    *transport.Client
	cancel    context.CancelFunc
}

// appliedAt is a peer's applied index as of a time.
type appliedAt struct {
	at    time.Time
	index uint64
}

type peerWatch struct {
	s   *Store
	ctx context.Context // run's: the probers live as long as it

	mu    sync.Mutex
	peers map[string]*peerProbe // by node id; members other than this node

	lastContact *prometheus.GaugeVec
	reachable   *prometheus.GaugeVec

	probers sync.WaitGroup
}

func newPeerWatch(s *Store) *peerWatch {
	return &peerWatch{s: s, peers: map[string]*peerProbe{},
		lastContact: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "idemgate_peer_last_contact_seconds",
			Help: "Seconds since the peer last answered this node's status probe (-1: never).",
		}, []string{"peer"}),
		reachable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "idemgate_peer_reachable",
			Help: "1 when the peer answered this node's last status probe (one a second), else 0.",
		}, []string{"peer"}),
	}
}

// run keeps one prober per member until ctx ends.
func (w *peerWatch) run(ctx context.Context) {
	w.mu.Lock()
	w.ctx = ctx
	w.mu.Unlock()
	t := time.NewTicker(probeEvery / 4) // new members are probed within a quarter period
	defer t.Stop()
	defer w.stopAll()
	for {
		w.sync()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sync starts probers for new members and stops those of removed ones. A
// removed node stops probing: the members would refuse it anyway.
func (w *peerWatch) sync() {
	ids := w.s.members.list()
	if w.s.Removed() {
		ids = nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ctx := w.ctx
	if ctx == nil || ctx.Err() != nil {
		return // not started, or stopping
	}
	for id, p := range w.peers {
		if addr, ok := ids[id]; !ok || addr != p.addr { // removed, or re-addressed
			p.cancel()
			delete(w.peers, id)
			if ok {
				continue // probed again at its new address below
			}
			w.lastContact.DeleteLabelValues(id)
			w.reachable.DeleteLabelValues(id)
		}
	}
	for id, addr := range ids {
		if id == w.s.cfg.NodeID || w.peers[id] != nil {
			continue
		}
		pctx, cancel := context.WithCancel(ctx)
		p := &peerProbe{addr: addr, cancel: cancel}
		w.peers[id] = p
		w.lastContact.WithLabelValues(id).Set(-1)
		w.reachable.WithLabelValues(id).Set(0)
		w.probers.Add(1)
		go func() { defer w.probers.Done(); w.probeLoop(pctx, id, addr, p) }()
	}
}

func (w *peerWatch) stopAll() {
	w.mu.Lock()
	for id, p := range w.peers {
		p.cancel()
		delete(w.peers, id)
	}
	w.mu.Unlock()
	w.probers.Wait()
}

func (w *peerWatch) probeLoop(ctx context.Context, id, addr string, p *peerProbe) {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	defer func() {
		w.mu.Lock()
		if p.client != nil {
			p.client.Close()
		}
		w.mu.Unlock()
	}()
	for {
		w.probe(ctx, id, addr, p)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// probe asks the peer once, bounded by a probe period.
func (w *peerWatch) probe(ctx context.Context, id, addr string, p *peerProbe) {
	ctx, cancel := context.WithTimeout(ctx, probeEvery)
	defer cancel()
	w.mu.Lock()
	c := p.client
	w.mu.Unlock()
	var err error
	if c == nil || !c.Alive() {
		timeout := min(w.s.cfg.DialTimeout, probeEvery)
		c, err = transport.DialForward(w.s.peer(id, addr, timeout), w.s.maxFrame(), &wireErrors)
		if err == nil {
			w.mu.Lock()
			switch {
			case ctx.Err() != nil: // stopped while dialling
				c.Close()
				w.mu.Unlock()
				return
			case p.client != nil && p.client.Alive(): // a recheck dialled at the same time
				c.Close()
				c = p.client
			default:
				p.client = c
			}
			w.mu.Unlock()
		}
	}
	var st statusAnswer
	if err == nil {
		var raw []byte
		if raw, err = c.Call(ctx, transport.Status, nil); err == nil {
			st, err = decodeStatus(raw)
		}
	}
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
		return // the prober was stopped
	}
	now := time.Now()
	viewLast := w.s.raft.LastIndex()
	w.mu.Lock()
	wasOK := p.ok
	p.ok, p.tried = err == nil, true
	switch {
	case wasOK && !p.ok: // a peer this node reached is lost (one that never answered is not news)
		w.s.logger.Warn("peer unreachable", "peer", id, "last_contact", now.Sub(p.contact).Round(time.Millisecond))
		p.lost = true
	case p.ok && p.lost:
		w.s.logger.Info("peer reachable", "peer", id)
		p.lost = false
	}
	if p.ok {
		p.contact, p.lastIndex, p.viewLast, p.state = now, st.lastIndex, viewLast, st.state
		p.applied[p.next%len(p.applied)] = appliedAt{at: now, index: st.applied}
		p.next++
	}
	contact := p.contact
	w.mu.Unlock()
	w.reachable.WithLabelValues(id).Set(boolGauge(err == nil))
	if !contact.IsZero() {
		w.lastContact.WithLabelValues(id).Set(now.Sub(contact).Seconds())
	}
}

// statuses is this node's view of every member, itself included.
func (w *peerWatch) statuses() []PeerStatus {
	now := time.Now()
	out := []PeerStatus{{ID: w.s.cfg.NodeID, Reachable: true, LastContactMS: 0,
		MatchIndex: w.s.raft.LastIndex(), State: roleName(w.s.raftState())}}
	w.mu.Lock()
	for id, p := range w.peers {
		ps := PeerStatus{ID: id, Reachable: p.ok, LastContactMS: -1, MatchIndex: p.lastIndex, State: p.state}
		if !p.contact.IsZero() {
			ps.LastContactMS = now.Sub(p.contact).Milliseconds()
		}
		if p.viewLast > p.lastIndex {
			ps.Lag = p.viewLast - p.lastIndex
		}
		switch {
		case !p.tried:
			ps.State = stateUnknown
		case !p.ok:
			ps.State = "unreachable"
		}
		out = append(out, ps)
	}
	w.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// reachableVoters counts the voters of cfg this node reaches now (itself
// included), leaving out the node skip. Each is probed again first: the
// decision is made on answers given now, not on the last period's.
func (w *peerWatch) reachableVoters(ctx context.Context, cfg raft.Configuration, skip raft.ServerID) (voters, reachable int, down []string) {
	w.s.members.refresh()
	w.sync()
	w.mu.Lock()
	var wg sync.WaitGroup
	for _, srv := range cfg.Servers {
		p := w.peers[string(srv.ID)]
		if p == nil || srv.ID == skip || srv.Suffrage != raft.Voter {
			continue
		}
		wg.Add(1)
		go func(id, addr string, p *peerProbe) { defer wg.Done(); w.probe(ctx, id, addr, p) }(string(srv.ID), string(srv.Address), p)
	}
	w.mu.Unlock()
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, srv := range cfg.Servers {
		if srv.Suffrage != raft.Voter || srv.ID == skip {
			continue
		}
		voters++
		p := w.peers[string(srv.ID)]
		if string(srv.ID) == w.s.cfg.NodeID || (p != nil && p.ok) {
			reachable++
		} else {
			down = append(down, string(srv.ID))
		}
	}
	return voters, reachable, down
}

// appliedBefore returns the index peer id reported applied in its newest
// answer at least age old (and at most a few probe periods), if any. A
// follower that has not reached its leader's applied index of a second ago
// is stuck, not merely a few milliseconds behind.
func (w *peerWatch) appliedBefore(id string, age time.Duration) (uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.peers[id]
	if p == nil {
		return 0, false
	}
	now := time.Now()
	var best appliedAt
	for _, a := range p.applied {
		if d := now.Sub(a.at); !a.at.IsZero() && d >= age && d <= age+4*probeEvery && a.at.After(best.at) {
			best = a
		}
	}
	return best.index, !best.at.IsZero()
}

// peer returns what this node knows of member id.
func (w *peerWatch) peer(id string) (PeerStatus, bool) {
	for _, ps := range w.statuses() {
		if ps.ID == id {
			return ps, true
		}
	}
	return PeerStatus{}, false
}

// statusAnswer is a node's answer to transport.Status:
//
//	last log index (8) | applied index (8) | state name
type statusAnswer struct {
	lastIndex, applied uint64
	state              string
}

func (s *Store) statusAnswer() []byte {
	b := binary.BigEndian.AppendUint64(nil, s.raft.LastIndex())
	b = binary.BigEndian.AppendUint64(b, s.fsm.AppliedIndex())
	st := roleName(s.raftState())
	if s.Removed() {
		st = "removed"
	}
	return append(b, st...)
}

func decodeStatus(p []byte) (statusAnswer, error) {
	if len(p) < 16 || len(p) > 16+32 {
		return statusAnswer{}, errors.New("raftstore: malformed status answer")
	}
	return statusAnswer{lastIndex: binary.BigEndian.Uint64(p), applied: binary.BigEndian.Uint64(p[8:]),
		state: string(p[16:])}, nil
}

// Cluster returns the membership as the leader sees it, or as this node
// sees it when it is the leader, was removed, or the leader cannot be
// asked.
func (s *Store) Cluster(ctx context.Context) (storeapi.ClusterView, error) {
	if addr, id := s.raft.LeaderWithID(); addr != "" && string(id) != s.cfg.NodeID && !s.Removed() {
		ctx, cancel := context.WithTimeout(ctx, probeEvery)
		raw, err := s.forward(ctx, string(id), string(addr), transport.Peers, nil)
		cancel()
		var lv peersAnswer
		if err == nil && json.Unmarshal(raw, &lv) == nil {
			if lv.Servers != nil {
				return storeapi.ClusterView{View: string(id), LastIndex: lv.LastIndex, Servers: lv.Servers}, nil
			}
			// A leader of an earlier version answers with its probes
			// only: beside this node's membership, lags from its index.
			servers, err := s.Servers()
			if err != nil {
				return storeapi.ClusterView{}, err
			}
			for i := range lv.Peers {
				lv.Peers[i].Lag = 0
				if lv.LastIndex > lv.Peers[i].MatchIndex {
					lv.Peers[i].Lag = lv.LastIndex - lv.Peers[i].MatchIndex
				}
			}
			return storeapi.ClusterView{View: string(id), LastIndex: lv.LastIndex, Servers: withStatuses(servers, lv.Peers)}, nil
		}
	}
	return s.ownView()
}

// ownView is this node's own view of the membership.
func (s *Store) ownView() (storeapi.ClusterView, error) {
	servers, err := s.Servers()
	if err != nil {
		return storeapi.ClusterView{}, err
	}
	return storeapi.ClusterView{View: s.cfg.NodeID, LastIndex: s.raft.LastIndex(), Servers: withStatuses(servers, s.peers.statuses())}, nil
}

// withStatuses fills each member's probe fields from statuses; a member
// with none (not probed yet: just added, or this node was removed and
// probes nobody) is "unknown", never contacted.
func withStatuses(servers []storeapi.Server, statuses []PeerStatus) []storeapi.Server {
	for i := range servers {
		srv := &servers[i]
		if srv.Removed {
			continue // this node, removed: Servers says so
		}
		srv.Reachable, srv.LastContactMS, srv.MatchIndex, srv.Lag, srv.State = false, -1, 0, 0, stateUnknown
		for _, ps := range statuses {
			if ps.ID == srv.ID {
				srv.Reachable, srv.LastContactMS, srv.MatchIndex, srv.Lag, srv.State = ps.Reachable, ps.LastContactMS, ps.MatchIndex, ps.Lag, ps.State
			}
		}
	}
	return servers
}

// peersAnswer is a node's answer to transport.Peers: its view of the members.
// Peers is what nodes of earlier versions read; Servers the whole view.
type peersAnswer struct {
	LastIndex uint64            `json:"last_index"`
	Peers     []PeerStatus      `json:"peers"`
	Servers   []storeapi.Server `json:"servers,omitempty"`
}

func (s *Store) peersAnswer() []byte {
	// Answered on the forwarding connection, in order with the writes
	// behind it: nothing here waits (a member not probed yet is unknown).
	statuses := s.peers.statuses()
	servers, err := s.Servers()
	if err == nil {
		servers = withStatuses(servers, statuses)
	}
	b, _ := json.Marshal(peersAnswer{LastIndex: s.raft.LastIndex(), Peers: statuses, Servers: servers})
	return b
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
