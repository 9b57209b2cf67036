package raftstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/datadir"
	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/raftstore/transport"
	"github.com/idemgate/idemgate/ttl"
)

// Store is one node's replicated store.
type Store struct {
	// Commands are the typed operations (ops.go), proposed through Raft.
	Commands

	cfg    Config
	logger *slog.Logger

	raft  *raft.Raft
	fsm   *fsm.FSM
	wrap  *appliedFSM
	logs  datadir.LogStore // raft.db or raft-wal/ (Config.LogStore)
	cache *logCache        // recent entries in memory: replication and reads skip bbolt and msgpack
	snaps raft.SnapshotStore
	trans *guardedTransport
	// members is who may connect to the Raft port.
	members *members
	join    *joiner     // what a node without a configuration learned of its peers
	peers   *peerWatch  // the members' status, as this node's probes find it
	coal    *coalescer  // packs the commands proposed here into log entries
	reads   *readGroup  // linearizable reads share barriers
	nudge   commitNudge // tells followers the commit index a read of theirs waits for
	sweeper *ttl.Sweeper
	clock   clockGuard

	fwdMu     sync.Mutex
	fwd       map[string]*transport.Client // by address dialled: this node's connections to leaders
	fwdClosed bool
	fwdServer *transport.Server            // answers the requests forwarded to this node
	tracer    atomic.Pointer[trace.Tracer] // spans of applies forwarded with a trace context (SetTracer)
	grants    *grantFeed                   // the grants this node applied, for others' waiters (grants.go)
	onGrants  atomic.Pointer[func(grants []command.LockGrant)]
	fwdConns  sync.WaitGroup
	connMu    sync.Mutex
	inbound   map[net.Conn]struct{}
	fan       *fanout // Pub/Sub's links to the peers (pubsub.go)
	// scriptRunner runs a script a follower forwarded (leaderscript.go):
	// the Redis listener's, once it registered.
	scriptRunner atomic.Pointer[scriptRunner]

	barrierTerm atomic.Uint64 // the term whose first entries this leader has applied
	diskLow     atomic.Bool   // free space below MinFreeBytes: refuse writes
	diskFree    atomic.Uint64 // the data directory's free bytes, last measured
	health      health        // sampled for readiness and the no-leader answer (ready.go)
	leaderWake  leaderWake    // wakes calls waiting for a leader when it changes (leaderwake.go)
	// firstBackoff, when set (tests), replaces leaderBackoffFirst (ns).
	firstBackoff atomic.Int64

	metrics *metrics
	obsCh   chan raft.Observation
	obs     *raft.Observer

	// started is closed once raft and the metrics exist: the Raft port
	// accepts connections before that (raft's transport needs it), and
	// forwarded requests wait for it.
	started   chan struct{}
	closing   chan struct{} // closed when Close starts: waits give up
	stop      raftStop      // Raft stopped for good, and why (stop.go)
	unlock    func()        // gives up the data directory's lock (datadir.Lock)
	cancel    context.CancelFunc
	bg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// logCacheSize is how many recent log entries are kept in memory (at most
// Config.LogCacheBytes of them); a few full batches (MaxAppendEntries) so
// followers catching up by a batch or two are served from memory.
const logCacheSize = 4096

// Open opens the node's data and starts Raft. A node without Raft state
// forms a new cluster of cfg.Peers only with cfg.Bootstrap, once all of
// them answer and hold none (bootstrap.go); else it waits to be added.
func Open(cfg Config) (_ *Store, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := datadir.Private(cfg.DataDir); err != nil {
		return nil, err
	}
	unlock, err := datadir.Lock(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	// s is Open's own variable, not its named result: the goroutines and
	// closures below read it while the return statement writes the result.
	s := &Store{cfg: cfg, logger: cfg.Logger.With("node", cfg.NodeID), closing: make(chan struct{}),
		started: make(chan struct{}), fwd: map[string]*transport.Client{}, inbound: map[net.Conn]struct{}{},
		unlock: unlock, stop: newRaftStop()}
	s.Commands = Commands{Propose: s.Apply, Read: s.KV, Pipeline: s.pipeline, GoneOnLeader: s.goneOnLeader}
	closers := []io.Closer{closerFunc(unlock)} // closed last
	closing := s.closing                       // what the deferred cleanup closes
	defer func() {
		if err != nil {
			close(closing) // what waits for started gives up
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i].Close()
			}
		}
	}()

	s.fsm, err = fsm.Open(fsm.Config{Path: filepath.Join(cfg.DataDir, "fsm.db"), NoSync: cfg.FSMNoSync,
		CommitEvery: cfg.ApplyCommitEvery, CommitInterval: cfg.ApplyCommitInterval, Logger: s.logger})
	if err != nil {
		return nil, err
	}
	closers = append(closers, s.fsm)
	s.grants = newGrantFeed()
	s.fsm.SetLockObserver(func(grants []command.LockGrant) {
		s.grants.publish(grants)
		if fn := s.onGrants.Load(); fn != nil {
			(*fn)(grants)
		}
	})
	s.wrap = newAppliedFSM(s.fsm)

	s.logs, err = datadir.OpenLog(cfg.DataDir, cfg.LogStore, cfg.LogNoSync)
	if err != nil {
		return nil, err
	}
	closers = append(closers, s.logs)
	var logs raft.LogStore = s.logs
	if cfg.wrapLogStore != nil {
		logs = cfg.wrapLogStore(logs)
	}
	s.cache = newLogCache(logs, logCacheSize, cfg.LogCacheBytes)

	hlog := newHclog(s.logger, "raft", nil) // Raft's lines in the node's format, at its level
	s.snaps, err = datadir.SnapshotStore(cfg.DataDir, hlog)
	if err != nil {
		return nil, err
	}
	if err := s.catchUpFromSnapshot(); err != nil {
		return nil, err
	}

	ln, err := net.Listen("tcp", cfg.RaftBind)
	if err != nil {
		return nil, fmt.Errorf("raftstore: listen %s: %w", cfg.RaftBind, err)
	}
	adv, err := net.ResolveTCPAddr("tcp", cfg.advertise())
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("raftstore: advertise %s: %w", cfg.advertise(), err)
	}
	s.members = newMembers(s)
	s.fan = newFanout(s)
	s.join = newJoiner(s)
	s.peers = newPeerWatch(s)
	s.coal = newCoalescer(s)
	s.reads = &readGroup{barrier: s.barrier, timeout: cfg.ApplyTimeout}
	s.nudge.s = s
	s.fwdServer = &transport.Server{Handler: forwarded{s}, MaxFrame: s.maxFrame(), Errors: &wireErrors, Logger: s.logger}
	mc := transport.Config{Advertise: adv, MaxConns: cfg.MaxPeerConns, Gate: s.members, Forward: s.serveForward, PubSub: s.servePubSub, Hello: s.helloNow,
		Cluster: s.clusterID, DialTLS: func(addr string) *tls.Config { return s.peerClientTLS(s.members.idAt(addr)) }, Logger: s.logger}
	if cfg.PeerTLS != nil {
		mc.TLS = cfg.PeerTLS.PeerServer(s.members.handshake)
	}
	s.trans = &guardedTransport{NetworkTransport: raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:                transport.NewMux(ln, mc),
		MaxPool:               3,
		Timeout:               10 * time.Second,
		ServerAddressProvider: cfg.AddressProvider,
		Logger:                hlog,
	})}
	closers = append(closers, s.trans)

	rc := cfg.raftConfig()
	rc.Logger = hlog
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("raftstore: %w", err)
	}
	has, err := raft.HasExistingState(s.cache, s.logs, s.snaps)
	if err != nil {
		return nil, fmt.Errorf("raftstore: %w", err)
	}
	if !has && cfg.Bootstrap && len(cfg.Peers) == 1 {
		// A one-node cluster has nobody to ask first.
		if err := raft.BootstrapCluster(rc, s.cache, s.logs, s.snaps, s.trans, s.bootstrapConfiguration()); err != nil {
			return nil, fmt.Errorf("raftstore: bootstrap: %w", err)
		}
	}
	s.raft, err = raft.NewRaft(rc, s.wrap, s.cache, s.logs, s.snaps, s.trans)
	if err != nil {
		return nil, fmt.Errorf("raftstore: start raft: %w", err)
	}
	s.metrics = newMetrics(s)
	close(s.started)
	s.newEventObserver()

	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.sweeper = ttl.NewSweeper(s, cfg.Sweeper, nil, s.logger)
	s.clock.s = s
	s.bg.Add(11)
	go func() { defer s.bg.Done(); s.awaitCluster(ctx) }()
	go func() { defer s.bg.Done(); s.giveClusterID(ctx) }()
	go func() { defer s.bg.Done(); s.coal.run(ctx) }()
	go func() { defer s.bg.Done(); s.members.run(ctx) }()
	go func() { defer s.bg.Done(); s.peers.run(ctx) }()
	go func() { defer s.bg.Done(); s.tick(ctx) }()
	go func() { defer s.bg.Done(); s.watchDisk(ctx) }()
	go func() { defer s.bg.Done(); s.sweeper.Run(ctx) }()
	go func() { defer s.bg.Done(); s.reclaim(ctx) }()
	go func() { defer s.bg.Done(); s.watchEvents(ctx) }()
	go func() { defer s.bg.Done(); s.watchFSM(ctx) }()
	return s, nil
}

// catchUpFromSnapshot restores the newest snapshot when the state machine's
// file is behind it (lost, or rolled back by a crash with FSMNoSync). Raft
// itself does not restore on start (NoSnapshotRestoreOnStart) and will only
// replay the log after the snapshot.
func (s *Store) catchUpFromSnapshot() error {
	metas, err := s.snaps.List()
	if err != nil || len(metas) == 0 {
		return err
	}
	_, rc, err := s.snaps.Open(metas[0].ID)
	if err != nil {
		return fmt.Errorf("raftstore: open snapshot %s: %w", metas[0].ID, err)
	}
	applied, err := fsm.SnapshotAppliedIndex(rc)
	rc.Close()
	if err != nil {
		return fmt.Errorf("raftstore: snapshot %s: %w", metas[0].ID, err)
	}
	if s.fsm.AppliedIndex() >= applied {
		return nil
	}
	s.logger.Warn("state machine is behind the newest snapshot; restoring it",
		"applied", s.fsm.AppliedIndex(), "snapshot", applied)
	_, rc, err = s.snaps.Open(metas[0].ID)
	if err != nil {
		return err
	}
	return s.fsm.Restore(rc)
}

// watchFSM stops Raft when the state machine can no longer write: applying
// further entries would make this replica diverge. A restart replays them.
func (s *Store) watchFSM(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-s.fsm.Failed():
		s.logger.Error("stopping raft: state machine storage failed", "error", s.fsm.FailErr())
		s.stopRaft(fmt.Errorf("state machine storage failed: %w", s.fsm.FailErr()))
	}
}

// Close stops the node: Raft, forwarding, the log store and the data file.
// The stores close only once raft's goroutines have ended, whoever stopped
// it first (the disk guard may have); a second Close returns the first's
// answer.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.cancel()
		s.bg.Wait()
		s.raft.DeregisterObserver(s.obs)
		s.awaitRaft(s.stopRaft(errClosed))
		var errs []error
		s.trans.stopHeartbeats() // before the log store closes under one
		s.fwdMu.Lock()
		s.fwdClosed = true
		for _, c := range s.fwd {
			c.Close()
		}
		s.fwdMu.Unlock()
		s.fan.close()
		errs = append(errs, s.trans.Close())
		s.connMu.Lock()
		for c := range s.inbound {
			c.Close()
		}
		s.connMu.Unlock()
		s.fwdConns.Wait()
		errs = append(errs, s.logs.Close(), s.fsm.Close())
		s.unlock() // the files are closed: another process may open them
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// shutdownStall is how long raft's shutdown may take before Close frees
// replication goroutines stuck in a pipeline (closePipelines).
const shutdownStall = 5 * time.Second

// awaitRaft waits until raft's goroutines have ended (done, from
// stopRaft); past shutdownStall it closes raft's pipelines, which frees a
// shutdown stalled in one.
func (s *Store) awaitRaft(done <-chan struct{}) {
	select {
	case <-done:
	case <-time.After(shutdownStall):
		s.logger.Warn("raft shutdown stalled: closing its replication pipelines", "after", shutdownStall)
		s.trans.closePipelines()
		<-done
	}
}

// untrackConn forgets an inbound connection serveInbound tracked.
func (s *Store) untrackConn(c net.Conn) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	delete(s.inbound, c)
}

// peerClientTLS is the TLS config for dialling node id ("" when unknown:
// any member's certificate), or nil without PeerTLS. A certificate the
// cluster removed is refused on this side too.
func (s *Store) peerClientTLS(id string) *tls.Config {
	if s.cfg.PeerTLS == nil {
		return nil
	}
	return s.cfg.PeerTLS.PeerClient(id, s.members.handshake)
}

// dialAddr is the address to dial for peer id (a test proxy, or addr).
func (s *Store) dialAddr(id, addr string) string {
	if s.cfg.AddressProvider != nil && id != "" {
		if a, err := s.cfg.AddressProvider.ServerAddr(raft.ServerID(id)); err == nil && a != "" {
			return string(a)
		}
	}
	return addr
}

// NodeID is this node's id.
func (s *Store) NodeID() string { return s.cfg.NodeID }

// Raft exposes the engine (benchmarks, tests, cluster status).
func (s *Store) Raft() *raft.Raft { return s.raft }

// FSM exposes the state machine (state hashes in tests).
func (s *Store) FSM() *fsm.FSM { return s.fsm }

// IsLeader reports whether this node believes it is the leader.
func (s *Store) IsLeader() bool { return s.raftState() == raft.Leader }

// Leader returns the current leader's id and Raft address, if known.
func (s *Store) Leader() (id, addr string) {
	a, i := s.raft.LeaderWithID()
	return string(i), string(a)
}

// closerFunc is a func as an io.Closer.
type closerFunc func()

func (f closerFunc) Close() error { f(); return nil }

// guardedTransport is raft's TCP transport with its heartbeat path fenced
// for shutdown. Raft handles a heartbeat on the connection's own goroutine
// (not its main loop, which Shutdown waits for): one arriving as the node
// stops wrote the new term into a log store already closed, and raft
// panicked ("failed to save current term: database not open"). Close stops
// the heartbeat path, waiting for one in flight, before the stores close.
type guardedTransport struct {
	*raft.NetworkTransport
	mu      sync.RWMutex
	stopped bool
	handler func(rpc raft.RPC) // what the transport calls: cb behind the fence

	pipeMu sync.Mutex
	pipes  map[*trackedPipeline]struct{} // the AppendEntries pipelines raft holds open
}

// AppendEntriesPipeline opens raft's pipeline and keeps it in pipes, so a
// shutdown that stalls in one can close it (closePipelines).
func (t *guardedTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	tp := &trackedPipeline{AppendPipeline: p, t: t}
	t.pipeMu.Lock()
	if t.pipes == nil {
		t.pipes = map[*trackedPipeline]struct{}{}
	}
	t.pipes[tp] = struct{}{}
	t.pipeMu.Unlock()
	return tp, nil
}

// closePipelines closes every pipeline raft still holds open. hashicorp/raft
// (v1.7.3) can stall its shutdown in one: a replication goroutine hands a
// future to a pipeline whose decoder has stopped, and waits for the
// pipeline to close, which only that goroutine would do.
func (t *guardedTransport) closePipelines() {
	t.pipeMu.Lock()
	ps := make([]*trackedPipeline, 0, len(t.pipes))
	for p := range t.pipes {
		ps = append(ps, p)
	}
	t.pipeMu.Unlock()
	for _, p := range ps {
		p.Close()
	}
}

// trackedPipeline is a pipeline of guardedTransport's pipes.
type trackedPipeline struct {
	raft.AppendPipeline
	t *guardedTransport
}

func (p *trackedPipeline) Close() error {
	p.t.pipeMu.Lock()
	delete(p.t.pipes, p)
	p.t.pipeMu.Unlock()
	return p.AppendPipeline.Close() // raft's pipelines close once, whoever asks
}

func (t *guardedTransport) SetHeartbeatHandler(cb func(rpc raft.RPC)) {
	t.handler = func(rpc raft.RPC) {
		t.mu.RLock()
		defer t.mu.RUnlock()
		if t.stopped {
			return // unanswered: the transport's handler gives up when it closes
		}
		cb(rpc)
	}
	t.NetworkTransport.SetHeartbeatHandler(t.handler)
}

func (t *guardedTransport) stopHeartbeats() {
	t.mu.Lock()
	t.stopped = true
	t.mu.Unlock()
}

// appliedFSM wraps the state machine to wake readers waiting for an index
// to be applied.
type appliedFSM struct {
	*fsm.FSM
	mu   sync.Mutex
	wake chan struct{}
}

func newAppliedFSM(f *fsm.FSM) *appliedFSM {
	return &appliedFSM{FSM: f, wake: make(chan struct{})}
}

func (a *appliedFSM) ApplyBatch(logs []*raft.Log) []interface{} {
	out := a.FSM.ApplyBatch(logs)
	a.notify()
	return out
}

func (a *appliedFSM) Apply(l *raft.Log) interface{} {
	return a.ApplyBatch([]*raft.Log{l})[0]
}

func (a *appliedFSM) Restore(rc io.ReadCloser) error {
	err := a.FSM.Restore(rc)
	a.notify()
	return err
}

func (a *appliedFSM) notify() {
	a.mu.Lock()
	close(a.wake)
	a.wake = make(chan struct{})
	a.mu.Unlock()
}

// changed returns a channel closed at the next apply.
func (a *appliedFSM) changed() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.wake
}

// roleName is the lowercase name of a raft state, as the API shows it.
func roleName(st raft.RaftState) string { return strings.ToLower(st.String()) }
