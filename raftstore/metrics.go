package raftstore

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// rejectReasons are every reason idemgate_peer_rejected_total counts: the
// Raft port's own (transport/mux.go), the admission after the preamble and a removed
// member's connection closed (peers.go, join.go), and the accepting side's
// certificate checks (certs.PeerError, and peers.go's removed_certificate).
// Each has a series at 0 from the start, so an alert on increase() fires at
// the first refusal; TestRejectReasonsListed holds the list to the code
// and to docs/security.md.
var rejectReasons = []string{
	"bad_protocol", "cluster_mismatch", "handshake", "handshake_timeout", "invalid_certificate", "no_certificate",
	"no_identity", "not_member", "plaintext", "removed_certificate", "removed_member", "shutdown",
	"too_many_connections", "too_many_pending", "unknown_ca",
}

// stuckCountCap bounds the index entries one scrape of idemgate_stuck
// visits: bounded work, whatever was left behind.
const stuckCountCap = 10000

type metrics struct {
	leaderChanges prometheus.Counter
	applyDuration prometheus.Histogram
	batchSize     prometheus.Histogram
	commitNudges  prometheus.Counter
}

func newMetrics(s *Store) *metrics {
	return &metrics{
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "idemgate_raft_leader_changes_total",
			Help: "Leader changes this node has observed.",
		}),
		applyDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "idemgate_raft_apply_duration_seconds",
			Help:    "Time from proposing a command on the leader to its application.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "idemgate_raft_batch_commands",
			Help:    "Commands per log entry this leader proposed (group commit).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		commitNudges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "idemgate_raft_commit_nudges_total",
			Help: "Empty entries this leader appended so that followers learn the commit index at once, for a read waiting there.",
		}),
	}
}

// Register registers the store's raft and state metrics on reg.
func (s *Store) Register(reg prometheus.Registerer) error {
	cs := []prometheus.Collector{
		s.members.rejected,
		s.peers.lastContact,
		s.peers.reachable,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "idemgate_ready",
			Help: "1 when this node can serve writes (what /readyz answers 200 for), else 0.",
		}, func() float64 { return boolGauge(s.Ready()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "idemgate_expiry_backlog",
			Help: "Entries (records, tokens, KV keys, digests) past their expiry that the leader's sweeper has not removed yet, counted up to 2^20 (0 on followers).",
		}, func() float64 { return float64(s.sweeper.Backlog()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "idemgate_disk_free_bytes",
			Help: "Free space of the file system holding the data directory, measured every disk check interval.",
		}, func() float64 { return float64(s.diskFree.Load()) }),
		s.metrics.leaderChanges,
		s.metrics.applyDuration,
		s.metrics.batchSize,
		s.metrics.commitNudges,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "idemgate_raft_state",
			Help: "This node's Raft state: 0 follower, 1 candidate, 2 leader, 3 shutdown.",
		}, func() float64 { return float64(s.raftState()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "idemgate_raft_term",
			Help: "This node's current Raft term: every election raises it.",
		}, func() float64 { return float64(s.raft.CurrentTerm()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "idemgate_raft_commit_index",
			Help: "The highest log index this node knows to be committed.",
		}, func() float64 { return float64(s.raft.CommitIndex()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "idemgate_raft_applied_index",
			Help: "The highest log index applied to this node's state machine.",
		}, func() float64 { return float64(s.fsm.AppliedIndex()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "idemgate_fsm_durable_index",
			Help: "The applied index this node's state machine file holds: what a crash of the process leaves (the log replays the rest). It trails idemgate_raft_applied_index while a transaction is open (raft.apply_commit_every).",
		}, func() float64 { return float64(s.fsm.DurableIndex()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "idemgate_pubsub_messages_total",
			Help:        "Published messages this node's Pub/Sub links wrote to its peers (result sent), or lost for a peer (result dropped: its link's queue was full or broke), counted per peer.",
			ConstLabels: prometheus.Labels{"result": "sent"},
		}, func() float64 { sent, _ := s.pubSubCounts(); return float64(sent) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "idemgate_pubsub_messages_total",
			Help:        "Published messages this node's Pub/Sub links wrote to its peers (result sent), or lost for a peer (result dropped: its link's queue was full or broke), counted per peer.",
			ConstLabels: prometheus.Labels{"result": "dropped"},
		}, func() float64 { _, dropped := s.pubSubCounts(); return float64(dropped) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "idemgate_fsm_commits_total",
			Help: "Transactions this node's state machine has committed to its file since it started.",
		}, func() float64 { return float64(s.fsm.Commits()) }),
	}
	for _, st := range []command.State{command.StateInFlight, command.StateCompleted, command.StateUnknown} {
		st := st
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "idemgate_records",
			Help:        "Idempotency records stored on this node, by state.",
			ConstLabels: prometheus.Labels{"state": st.String()},
		}, func() float64 { return float64(s.fsm.RecordCount(st)) }))
	}
	for _, k := range []ttl.Kind{ttl.KindRecord, ttl.KindOnce} {
		k := k
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "idemgate_stuck",
			Help:        "Work left behind, on this node's state: gateway records in flight past their processing deadline (kind record) and once claims begun past their lease that nobody took over or completed (kind once), counted up to 10000 between them. GET /v1/stuck lists them.",
			ConstLabels: prometheus.Labels{"kind": k.String()},
		}, func() float64 {
			recs, claims, err := s.fsm.CountStuck(time.Now(), stuckCountCap)
			if err != nil {
				return 0
			}
			if k == ttl.KindOnce {
				return float64(claims)
			}
			return float64(recs)
		}))
	}
	for _, k := range []ttl.Kind{ttl.KindRecord, ttl.KindToken, ttl.KindKV, ttl.KindLock, ttl.KindLockWait} {
		k := k
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "idemgate_expired_total",
			Help:        "Entries this node's state machine has expired, by kind.",
			ConstLabels: prometheus.Labels{"kind": k.String()},
		}, func() float64 { return float64(s.fsm.ExpiredCount(k)) }))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
