package raftstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/raftstore/transport"
)

// A node forms a new cluster only when told to (Config.Bootstrap), and even
// then only once every node of the cluster file answers its hello and holds
// no cluster either: a wiped node, or two, restarted beside a survivor that
// still holds the cluster (after a recover, say) never form a second one,
// whatever their flags. Without the instruction an empty data directory
// waits to be added (POST /v1/cluster/nodes on a member) and says so.
// etcd's --initial-cluster-state and Consul's bootstrap_expect answer the
// same question; neither asks every listed node first.
//
// Every node told to bootstrap proposes the same configuration (the file's
// nodes, all voters), as hashicorp/raft requires of nodes bootstrapped
// together; a node not told learns the configuration from the ones that
// were (join.go) and is replicated into the cluster. The cluster's id is
// given by its first leader (giveClusterID).

// bootstrapAskEvery is how often a node without a cluster asks its peers.
const bootstrapAskEvery = time.Second

// hasConfiguration reports whether Raft holds a configuration: the node
// bootstrapped, was added, or was restored or recovered.
func (s *Store) hasConfiguration() bool {
	return len(s.raft.GetConfiguration().Configuration().Servers) > 0
}

// waiting reports whether the node has no cluster yet.
func (s *Store) waiting() bool { return !s.hasConfiguration() }

// clusterID is this node's cluster id: the one its state machine applied,
// else the one of the cluster it waits to join; zero when neither is known.
func (s *Store) clusterID() command.ClusterID {
	if id := s.fsm.ClusterID(); !id.IsZero() {
		return id
	}
	return s.join.cluster()
}

// ClusterID is the cluster's id as this node knows it ("" before its first
// leader gave one).
func (s *Store) ClusterID() string { return s.clusterID().String() }

// awaitCluster runs on a node without a configuration until it has one:
// it asks its peers once a second who they are, which tells it the
// cluster it may be added to (join.go), and bootstraps a new cluster when
// told to and every peer holds none.
func (s *Store) awaitCluster(ctx context.Context) {
	if s.hasConfiguration() {
		return
	}
	if s.cfg.Bootstrap {
		s.logger.Info("no cluster state: forming a new cluster once every node of the cluster file answers and holds none",
			"nodes", peerList(s.cfg.Peers))
	} else {
		s.logger.Info("no cluster state: waiting to be added to a cluster (POST /v1/cluster/nodes on a member); " +
			"to form a new cluster instead, start every node of the cluster file with --bootstrap")
	}
	taken := false // a peer holds a cluster: this process never bootstraps
	lastWhy := ""
	t := time.NewTicker(bootstrapAskEvery)
	defer t.Stop()
	for {
		if s.hasConfiguration() {
			s.logger.Info("this node is a member of a cluster now", "cluster", s.ClusterID())
			return
		}
		answers, errs := s.join.ask()
		if s.cfg.Bootstrap && !taken {
			why, held := bootstrapBlocker(s.cfg, answers, errs)
			switch {
			case held && s.join.votes():
				// A peer formed the cluster first, this node among its
				// voters (nodes started together): its leader brings it in.
				taken = true
				s.logger.Info("joining the cluster a peer formed with this node as a voter: " + why)
			case held:
				taken = true
				s.logger.Warn("not forming a new cluster: " + why + "; waiting to be added instead (POST /v1/cluster/nodes on a member)")
			case why == "":
				err := s.raft.BootstrapCluster(s.bootstrapConfiguration()).Error()
				if err == nil {
					s.logger.Info("formed a new cluster", "voters", peerList(s.cfg.Peers))
					return
				}
				if !errors.Is(err, raft.ErrCantBootstrap) {
					s.logger.Error("bootstrap failed", "error", err)
				}
			case why != lastWhy:
				s.logger.Info("not forming the cluster yet: " + why)
			}
			lastWhy = why
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// bootstrapBlocker says why a node told to bootstrap may not yet ("" when
// it may); held is set when a peer already holds (or waits for) a cluster,
// so no new one may ever be formed beside it.
func bootstrapBlocker(cfg Config, answers map[string]transport.Hello, errs map[string]error) (why string, held bool) {
	var silent []string
	for _, p := range cfg.Peers {
		if p.ID == cfg.NodeID {
			continue
		}
		if h, ok := answers[p.ID]; ok {
			if h.State != transport.HelloEmpty {
				c := h.Cluster
				if c == "" {
					c = "(id not yet given)"
				}
				return fmt.Sprintf("node %s is %s of cluster %s", p.ID, stateWords(h.State), c), true
			}
			continue
		}
		silent = append(silent, fmt.Sprintf("%s (%v)", p.ID, errs[p.ID]))
	}
	if len(silent) > 0 {
		return "waiting for every node of the cluster file to answer; not yet: " + strings.Join(silent, ", "), false
	}
	return "", false
}

func stateWords(state string) string {
	switch state {
	case transport.HelloMember:
		return "a member"
	case transport.HelloRemoved:
		return "a removed member"
	}
	return "waiting to join"
}

// bootstrapConfiguration is the new cluster's: the file's nodes, voters.
func (s *Store) bootstrapConfiguration() raft.Configuration {
	var conf raft.Configuration
	for _, p := range s.cfg.Peers {
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr), Suffrage: raft.Voter})
	}
	return conf
}

// giveClusterID runs on every node: a leader whose state holds no cluster
// id proposes a new one. The state machine keeps the first it applies, so
// two leaders racing (one deposed) agree anyway.
func (s *Store) giveClusterID(ctx context.Context) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.IsLeader() || !s.fsm.ClusterID().IsZero() {
			continue
		}
		id, err := command.NewClusterID()
		if err != nil {
			continue
		}
		c, cancel := context.WithTimeout(ctx, s.cfg.ApplyTimeout)
		res, err := s.Apply(c, command.ClusterIDCommand(id))
		cancel()
		if err == nil && res.Code == command.CodeCreated {
			s.logger.Info("gave the cluster its id", "cluster", id.String())
		}
	}
}

func peerList(ps []Peer) string {
	ids := make(map[string]string, len(ps))
	for _, p := range ps {
		ids[p.ID] = p.RaftAddr
	}
	return memberList(ids)
}
