package raftstore

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/backup"
	"github.com/idemgate/idemgate/certs"
	"github.com/idemgate/idemgate/datadir"
	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/ttl"
)

// Peer is one voter of the initial cluster.
type Peer struct {
	ID       string
	RaftAddr string
}

// Config configures a Store. Build it with DefaultConfig and set the node's
// identity and addresses.
type Config struct {
	NodeID   string
	RaftBind string // address the Raft port listens on
	// RaftAdvertise is the address peers dial; empty means RaftBind.
	RaftAdvertise string
	DataDir       string
	// Peers are the nodes of the cluster file, this node included: the
	// voters a new cluster is formed with (Bootstrap), and the nodes a
	// node without Raft state asks which cluster it may be added to
	// (join.go). Empty: a node without state knows nobody to ask and
	// accepts Raft traffic from nobody (without TLS, from anyone).
	Peers []Peer
	// Bootstrap allows a node without Raft state to form a new cluster of
	// Peers, once every one of them answers and holds no cluster either
	// (bootstrap.go). Without it such a node waits to be added. A node with
	// state ignores it. A single-entry Peers bootstraps at once.
	Bootstrap bool

	// FSMNoSync skips the state machine's fsync (see fsm.Config.NoSync):
	// the Raft log is fsynced and holds every entry. On by default: it
	// takes two fsyncs per batch off every write's path.
	FSMNoSync bool
	// LogStore is where the Raft log and the stable store live:
	// datadir.LogBolt (raft.db) or datadir.LogWAL (raft-wal/); empty takes
	// the one the data directory holds (datadir.DefaultLogStore for a new
	// node). A data directory whose log is in the other one is refused
	// (datadir.OpenLog); `idemgate log migrate` moves it.
	LogStore string
	// ApplyCommitEvery and ApplyCommitInterval amortise the state
	// machine's commits (fsm.Config.CommitEvery, CommitInterval): one
	// transaction of its data file gathers up to ApplyCommitEvery log
	// entries, for at most ApplyCommitInterval, before it commits. 1
	// commits every batch Raft hands over. A crash loses only the open
	// transaction, which the log replays. On by default (1000 entries,
	// 100ms): a node committed once per log entry, and seven times less
	// with it (docs/experiments/2026-12-06-amortised-commits.md).
	ApplyCommitEvery    int
	ApplyCommitInterval time.Duration
	// LogNoSync skips the Raft log's fsync. UNSAFE: an acknowledged write
	// can be lost on power failure. For benchmarks only.
	LogNoSync bool

	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	MaxAppendEntries   int
	SnapshotThreshold  uint64
	SnapshotInterval   time.Duration
	TrailingLogs       uint64

	// ApplyTimeout bounds a write or linearizable read whose context has
	// no deadline: past it the caller gets storeapi.ErrNoLeader or storeapi.ErrTimeout.
	ApplyTimeout time.Duration
	// DialTimeout bounds dialing a peer.
	DialTimeout time.Duration
	// Sweeper tunes the leader's expiry sweeper (ttl.SweeperConfig).
	Sweeper ttl.SweeperConfig
	// MinFreeBytes: below it the node refuses writes; below a quarter of it
	// the node stops its Raft (disk.go). 0 turns the guard off.
	MinFreeBytes      uint64
	DiskCheckInterval time.Duration

	// MaxClockJump: how far ahead of the state machine's clock a leader's
	// own clock may be before the leader checks it with the other voters
	// (clockguard.go). A clock a quorum does not confirm is refused.
	MaxClockJump time.Duration
	// Clock is this node's wall clock; nil means time.Now. Tests skew it.
	Clock func() time.Time

	// PeerTLS, when set, secures the Raft port (Raft RPCs and forwarding):
	// mutual TLS 1.3 with the cluster CA, and a peer is accepted only when
	// its certificate names a node of the current Raft configuration. The
	// check is made in the handshake, before a byte of either protocol is
	// read. Nil: plaintext, for loopback clusters only.
	PeerTLS *certs.Source
	// MaxCommandBytes bounds one encoded command (a KV value, a stored
	// response with its headers): larger ones are refused before they are
	// proposed, and forwarding frames are bounded by it. Set it from the
	// listeners' body limits so both agree.
	MaxCommandBytes int
	// MaxBatchCommands and MaxBatchBytes bound one log entry of commands
	// packed together by the leader (coalesce.go); 1 proposes every
	// command alone.
	MaxBatchCommands int
	MaxBatchBytes    int
	// MaxBatchesInFlight is how many batches may be between raft.Apply
	// and their answer at once (coalesce.go). 1, the default, is pure
	// group commit: everything proposed while a batch commits gathers
	// into the next. More lets the next batch's leader log write overlap
	// the previous one's replication, at the price of smaller batches.
	MaxBatchesInFlight int
	// LogCacheBytes bounds the recent log entries kept in memory.
	LogCacheBytes int
	// MaxPeerConns caps the connections open on the Raft port at once
	// (Raft and forwarding together); more are closed at accept and
	// counted as too_many_connections.
	MaxPeerConns int

	// AddressProvider, when set, maps a peer's id to the address this node
	// dials for it (Raft and forwarding): the fault tests route links
	// through proxies with it.
	AddressProvider raft.ServerAddressProvider

	// wrapLogStore, set only by this package's tests, wraps the node's
	// log store before Raft gets it: a follower whose disk write is held.
	wrapLogStore func(raft.LogStore) raft.LogStore

	// Logger receives every line of the node, hashicorp/raft's included
	// (through an hclog adapter, hclog.go); its handler's level decides
	// which of Raft's lines show. Nil: slog.Default().
	Logger *slog.Logger
}

// The LAN timing profile (the cluster file's raft.timing: lan), chosen
// with idemgate bench --scenario failover (docs/operations.md, "Failover
// timing"): a follower calls an election after one to three heartbeat
// timeouts without its leader (hashicorp/raft looks at random intervals
// of one to two), and a candidate the other follower refused, because it
// still had the leader, tries again after one to two election timeouts,
// which hashicorp/raft wants no shorter than the heartbeat timeout. So a
// leader's death stops writes for two to five heartbeat timeouts. Shorter
// timeouts failed over faster and elected more often under load on a
// starved machine; a node paused for a heartbeat timeout is taken for dead.
const (
	LANHeartbeatTimeout = 300 * time.Millisecond
	LANElectionTimeout  = 300 * time.Millisecond
)

// MinRaftTimeout is the shortest heartbeat or election timeout a Config
// may have: below it a node on a busy machine elects without a failure.
const MinRaftTimeout = 10 * time.Millisecond

// DefaultConfig returns the settings idemgate serve uses.
func DefaultConfig() Config {
	rc := raft.DefaultConfig()
	return Config{
		HeartbeatTimeout:    rc.HeartbeatTimeout,
		ElectionTimeout:     rc.ElectionTimeout,
		LeaderLeaseTimeout:  rc.LeaderLeaseTimeout,
		CommitTimeout:       rc.CommitTimeout,
		MaxAppendEntries:    512,
		SnapshotThreshold:   16384,
		SnapshotInterval:    60 * time.Second,
		TrailingLogs:        10240,
		ApplyTimeout:        5 * time.Second,
		DialTimeout:         time.Second,
		MaxPeerConns:        256,
		LogCacheBytes:       32 << 20,
		MaxCommandBytes:     8 << 20,
		MaxBatchCommands:    256,
		MaxBatchBytes:       1 << 20,
		MaxBatchesInFlight:  1,
		MaxClockJump:        time.Hour,
		Sweeper:             ttl.DefaultSweeperConfig(),
		MinFreeBytes:        64 << 20,
		DiskCheckInterval:   time.Second,
		FSMNoSync:           true,
		ApplyCommitEvery:    1000,
		ApplyCommitInterval: 100 * time.Millisecond,
	}
}

// Validate checks the config and names the field at fault.
func (c Config) Validate() error {
	if c.NodeID == "" {
		return errors.New("raftstore: NodeID is empty")
	}
	if c.DataDir == "" {
		return errors.New("raftstore: DataDir is empty")
	}
	if _, _, err := net.SplitHostPort(c.RaftBind); err != nil {
		return fmt.Errorf("raftstore: RaftBind %q: %w", c.RaftBind, err)
	}
	if c.RaftAdvertise != "" {
		if _, _, err := net.SplitHostPort(c.RaftAdvertise); err != nil {
			return fmt.Errorf("raftstore: RaftAdvertise %q: %w", c.RaftAdvertise, err)
		}
	}
	seen := map[string]bool{}
	for i, p := range c.Peers {
		if p.ID == "" || p.RaftAddr == "" {
			return fmt.Errorf("raftstore: Peers[%d]: id and raft address are required", i)
		}
		if seen[p.ID] {
			return fmt.Errorf("raftstore: Peers[%d]: duplicate id %q", i, p.ID)
		}
		seen[p.ID] = true
	}
	if c.Bootstrap && len(c.Peers) == 0 {
		return errors.New("raftstore: Bootstrap needs Peers: the voters of the new cluster")
	}
	if c.Bootstrap && !seen[c.NodeID] {
		return fmt.Errorf("raftstore: Peers does not include this node %q: it cannot bootstrap a cluster without it", c.NodeID)
	}
	if c.LogStore != "" && !slices.Contains(datadir.LogStores, c.LogStore) {
		return fmt.Errorf("raftstore: LogStore %q: want one of %s", c.LogStore, strings.Join(datadir.LogStores, ", "))
	}
	if c.HeartbeatTimeout < MinRaftTimeout || c.ElectionTimeout < c.HeartbeatTimeout {
		return fmt.Errorf("raftstore: HeartbeatTimeout %s, ElectionTimeout %s: want the heartbeat timeout at least %s and the election timeout at least the heartbeat timeout (hashicorp/raft refuses less)",
			c.HeartbeatTimeout, c.ElectionTimeout, MinRaftTimeout)
	}
	if c.LeaderLeaseTimeout < MinRaftTimeout/2 || c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		return fmt.Errorf("raftstore: LeaderLeaseTimeout %s: want %s to the heartbeat timeout %s", c.LeaderLeaseTimeout, MinRaftTimeout/2, c.HeartbeatTimeout)
	}
	if c.ApplyTimeout <= 0 || c.DialTimeout <= 0 {
		return errors.New("raftstore: ApplyTimeout and DialTimeout must be positive")
	}
	if err := c.Sweeper.Validate(); err != nil {
		return fmt.Errorf("raftstore: Sweeper: %w", err)
	}
	if c.MaxCommandBytes <= 0 || c.MaxCommandBytes > 1<<30 {
		return errors.New("raftstore: MaxCommandBytes must be 1 byte to 1 GiB")
	}
	if c.MaxBatchCommands < 1 || c.MaxBatchCommands > fsm.MaxBatchCommands || c.MaxBatchBytes < 1 {
		return fmt.Errorf("raftstore: MaxBatchCommands must be 1 to %d and MaxBatchBytes positive", fsm.MaxBatchCommands)
	}
	if c.MaxBatchesInFlight < 1 || c.MaxBatchesInFlight > maxBatchesInFlight {
		return fmt.Errorf("raftstore: MaxBatchesInFlight must be 1 to %d", maxBatchesInFlight)
	}
	if c.ApplyCommitEvery < 1 || c.ApplyCommitEvery > fsm.MaxCommitEvery {
		return fmt.Errorf("raftstore: ApplyCommitEvery must be 1 to %d", fsm.MaxCommitEvery)
	}
	if c.ApplyCommitEvery > 1 && (c.ApplyCommitInterval <= 0 || c.ApplyCommitInterval > time.Minute) {
		return errors.New("raftstore: ApplyCommitInterval must be more than 0 and at most 1m")
	}
	if c.LogCacheBytes <= 0 {
		return errors.New("raftstore: LogCacheBytes must be positive")
	}
	if c.MaxPeerConns <= 0 {
		return errors.New("raftstore: MaxPeerConns must be positive")
	}
	if c.MaxClockJump < time.Minute {
		return errors.New("raftstore: MaxClockJump must be at least a minute (the idle clock tick is 30s)")
	}
	if c.MinFreeBytes > 0 && c.DiskCheckInterval <= 0 {
		return errors.New("raftstore: DiskCheckInterval must be positive when MinFreeBytes is set")
	}
	return nil
}

// Offline is the node's config for the operations on its data directory
// while it is stopped (package backup: Restore, Recover, Compact).
func (c Config) Offline() backup.Config {
	return backup.Config{NodeID: c.NodeID, DataDir: c.DataDir, FSMNoSync: c.FSMNoSync, LogStore: c.LogStore, Logger: c.Logger}
}

// Voters are peers as the voters of the cluster backup.Restore or
// backup.Recover makes.
func Voters(peers []Peer) []backup.Voter {
	out := make([]backup.Voter, len(peers))
	for i, p := range peers {
		out[i] = backup.Voter{ID: p.ID, RaftAddr: p.RaftAddr}
	}
	return out
}

func (c Config) advertise() string {
	if c.RaftAdvertise != "" {
		return c.RaftAdvertise
	}
	return c.RaftBind
}

func (c Config) raftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.NodeID)
	rc.HeartbeatTimeout = c.HeartbeatTimeout
	rc.ElectionTimeout = c.ElectionTimeout
	rc.LeaderLeaseTimeout = c.LeaderLeaseTimeout
	rc.CommitTimeout = c.CommitTimeout
	rc.MaxAppendEntries = c.MaxAppendEntries
	rc.BatchApplyCh = true
	rc.SnapshotThreshold = c.SnapshotThreshold
	rc.SnapshotInterval = c.SnapshotInterval
	rc.TrailingLogs = c.TrailingLogs
	// The state machine is persistent and skips what it already applied
	// (hashicorp/raft #523/#396); restoring the snapshot at every start
	// would only rewrite the same data. Open restores it when the state
	// machine's file is behind it.
	rc.NoSnapshotRestoreOnStart = true
	// A removed node keeps running as a follower that does not campaign:
	// it reports itself removed, and can be added again without a restart
	// (shut down, its Raft could not come back without one).
	rc.ShutdownOnRemove = false
	return rc
}
