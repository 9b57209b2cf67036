package raftstore

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/raftstore/transport"
)

// Joining is pulled, not pushed. A node without a Raft configuration (an
// empty data directory: it waits to be added, or to bootstrap) accepts Raft
// traffic from nobody until it has learned, from its peers, which cluster
// it is joining: it asks every node of the cluster file, and the voters
// those name, for their hello (over verified TLS, each certificate naming
// the node asked), and takes the configuration that most of the answering
// voters report alike. Then it accepts Raft and forwarding only from that
// configuration's voters, refuses the certificates that cluster removed,
// and refuses any other cluster's id. A node holding a removed member's
// certificate, or any certificate the CA signed, cannot make itself its
// leader: it is not a voter of the configuration the members report.
//
// Two configurations reported by as many voters each (an attacker's against
// the one surviving member's) are a conflict: the node takes neither, says
// so, and asks again.

// joinView is the cluster a waiting node learned from its peers.
type joinView struct {
	cluster command.ClusterID
	voters  map[string]string // id -> raft address
	removed map[string]map[command.Fingerprint]bool
	from    []string // the voters that reported it
}

// joiner holds what a node without a configuration learned of its peers.
type joiner struct {
	s *Store

	askMu sync.Mutex // one round of hellos at a time
	mu    sync.Mutex
	view  *joinView
	asked time.Time
	// answers are the last round's hellos by node id (errors for those
	// that did not answer).
	answers map[string]transport.Hello
	errs    map[string]error
	rounds  atomic.Int64 // rounds of hellos asked (tests wait for a few)
}

func newJoiner(s *Store) *joiner { return &joiner{s: s} }

// joinAskEvery bounds how often a refused peer makes the node ask again.
const joinAskEvery = 200 * time.Millisecond

// current is the view last learned (nil: none).
func (j *joiner) current() *joinView {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.view
}

// known reports whether the node knows the cluster it waits for.
func (j *joiner) known() bool { return j.current() != nil }

// cluster is the waited-for cluster's id (zero when none is known).
func (j *joiner) cluster() command.ClusterID {
	if v := j.current(); v != nil {
		return v.cluster
	}
	return command.ClusterID{}
}

// votes reports whether the waited-for cluster counts this node among its
// voters.
func (j *joiner) votes() bool {
	v := j.current()
	if v == nil {
		return false
	}
	_, ok := v.voters[j.s.cfg.NodeID]
	return ok
}

// idAt is the voter of the waited-for cluster at raft address addr.
func (j *joiner) idAt(addr string) string {
	if v := j.current(); v != nil {
		for id, a := range v.voters {
			if a == addr {
				return id
			}
		}
	}
	return ""
}

// removedCert reports whether the waited-for cluster removed node id with
// the certificate fp.
func (j *joiner) removedCert(id string, fp command.Fingerprint) bool {
	v := j.current()
	return v != nil && v.removed[id][fp]
}

// admit decides, on a node without a configuration, whether node may send
// Raft or forwarding traffic. ask: ask the peers again first (at most every
// joinAskEvery) when the view does not name it.
func (j *joiner) admit(node string, cluster command.ClusterID, ask bool) (reason string, err error) {
	v := j.current()
	if ask && (v == nil || !v.admits(node, j.s.cfg.PeerTLS != nil)) {
		j.mu.Lock()
		stale := time.Since(j.asked) >= joinAskEvery
		j.mu.Unlock()
		if stale {
			j.ask()
			v = j.current()
		}
	}
	if v == nil {
		return "not_member", fmt.Errorf("this node has no cluster yet and none of its peers named one it could join; refusing %q", node)
	}
	if !v.cluster.IsZero() && !cluster.IsZero() && v.cluster != cluster {
		return "cluster_mismatch", fmt.Errorf("this node waits to join cluster %s; the peer belongs to %s", v.cluster, cluster)
	}
	if !v.admits(node, j.s.cfg.PeerTLS != nil) {
		return "not_member", fmt.Errorf("this node waits to join the cluster whose voters are %s; %q is not one of them", memberList(v.voters), node)
	}
	return "", nil
}

// admits reports whether node is a voter of the view (anyone without TLS,
// where nothing proves a node's id).
func (v *joinView) admits(node string, tls bool) bool {
	if !tls {
		return true
	}
	_, ok := v.voters[node]
	return ok
}

// ask asks the peers for their hello and updates the view. It returns the
// answers by node id, and the errors of those that did not answer.
func (j *joiner) ask() (map[string]transport.Hello, map[string]error) {
	j.askMu.Lock()
	defer j.askMu.Unlock()
	answers, errs := map[string]transport.Hello{}, map[string]error{}
	targets := map[string]string{}
	for _, p := range j.s.cfg.Peers {
		if p.ID != j.s.cfg.NodeID {
			targets[p.ID] = p.RaftAddr
		}
	}
	// Two rounds: the file's nodes, then the voters they name that the
	// file does not (members added at runtime).
	for round := 0; round < 2 && len(targets) > 0; round++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for id, addr := range targets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h, err := j.s.askHello(id, addr)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs[id] = err
					return
				}
				answers[id] = h
			}()
		}
		wg.Wait()
		next := map[string]string{}
		for _, h := range answers {
			for _, v := range h.Voters {
				_, asked := answers[v.ID]
				if _, failed := errs[v.ID]; !asked && !failed && v.ID != j.s.cfg.NodeID {
					next[v.ID] = v.Raft
				}
			}
		}
		targets = next
	}
	j.rounds.Add(1)
	view, conflict := chooseView(answers)
	j.mu.Lock()
	was := j.view
	j.view, j.asked, j.answers, j.errs = view, time.Now(), answers, errs
	j.mu.Unlock()
	switch {
	case conflict != "":
		j.s.logger.Warn("peers report different clusters: accepting Raft traffic from none of them until they agree", "answers", conflict)
	case view != nil && (was == nil || was.cluster != view.cluster || memberList(was.voters) != memberList(view.voters)):
		j.s.logger.Info("learned the cluster this node waits to join", "cluster", view.cluster.String(),
			"voters", memberList(view.voters), "reported_by", strings.Join(view.from, ", "))
	}
	return answers, errs
}

// chooseView picks, from the hellos of a node's peers, the configuration
// most of its own voters report alike; conflict describes a tie between
// different ones (then there is no view).
func chooseView(answers map[string]transport.Hello) (view *joinView, conflict string) {
	type group struct {
		h    transport.Hello
		from []string
	}
	groups := map[string]*group{}
	for id, h := range answers {
		if (h.State != transport.HelloMember && h.State != transport.HelloRemoved) || !h.Votes() {
			continue // only a voter speaks for its configuration
		}
		k := h.Cluster + " " + h.VoterSet()
		g := groups[k]
		if g == nil {
			g = &group{h: h}
			groups[k] = g
		}
		g.from = append(g.from, id)
	}
	var best []*group
	for _, g := range groups {
		switch {
		case len(best) == 0 || len(g.from) > len(best[0].from):
			best = []*group{g}
		case len(g.from) == len(best[0].from):
			best = append(best, g)
		}
	}
	if len(best) == 0 {
		return nil, ""
	}
	if len(best) > 1 {
		var parts []string
		for _, g := range best {
			sort.Strings(g.from)
			parts = append(parts, fmt.Sprintf("%s say cluster %q with voters %s", strings.Join(g.from, ", "), g.h.Cluster, g.h.VoterSet()))
		}
		sort.Strings(parts)
		return nil, strings.Join(parts, "; ")
	}
	g := best[0]
	sort.Strings(g.from)
	v := &joinView{cluster: g.h.ClusterID(), voters: map[string]string{}, removed: map[string]map[command.Fingerprint]bool{}, from: g.from}
	for _, p := range g.h.Voters {
		v.voters[p.ID] = p.Raft
	}
	// The removed certificates every supporter reports.
	for _, id := range g.from {
		for _, gone := range answers[id].Removed {
			set := v.removed[gone.ID]
			if set == nil {
				set = map[command.Fingerprint]bool{}
				v.removed[gone.ID] = set
			}
			for _, s := range gone.Fingerprints {
				if fp, ok := parseFingerprint(s); ok {
					set[fp] = true
				}
			}
		}
	}
	return v, ""
}

func parseFingerprint(s string) (command.Fingerprint, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(command.Fingerprint{}) {
		return command.Fingerprint{}, false
	}
	return command.Fingerprint(b), true
}
