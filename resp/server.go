package resp

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgate/idemgate/internal/conncap"
)

// Server is the listener: it accepts connections and serves each on a
// goroutine of its own until the client leaves, a limit closes it, or
// Close.
type Server struct {
	cfg    Config
	store  Store
	tok    Tokens
	once   Once
	locks  Locks
	m      *metrics
	logger *slog.Logger
	auth   atomic.Pointer[AuthFunc]
	authMu sync.RWMutex // orders SetAuth with each AUTH (auth.go)
	start  time.Time
	nextID atomic.Int64
	// scripts are the scripts EVAL and SCRIPT LOAD gave this node
	// (commands_script.go).
	scripts *scriptCache
	runs    *scriptSlots // the scripts running or compiling (script_slots.go)
	turns   *keyTurns    // the writing scripts' turns on their keys (script_turns.go)
	// blocks are the clients blocked in BLPOP, BRPOP (blocking.go).
	blocks *blocker
	// track is CLIENT TRACKING's table (tracking.go).
	track *tracker
	// errs counts the error replies written to clients (errorstats.go).
	errs errorStats
	// budget counts the bytes held for clients (budget.go).
	budget budget
	// ps is the node's Pub/Sub subscriptions; bcast carries a PUBLISH to
	// the other nodes (nil: a store that has none, one node).
	ps    *pubsub
	bcast Broadcaster
	// leaders carries a follower's writing scripts to the leader
	// (script_leader.go; nil: a store that has none, one node).
	leaders LeaderScripts

	ln     net.Listener
	mu     sync.Mutex
	conns  map[*conn]struct{}
	ids    map[int64]*conn // the same, by id (CLIENT TRACKING's REDIRECT)
	closed bool
	// stopping is closed when Close begins: what waits without a bound
	// (a BLPOP with no timeout) ends on it.
	stopping chan struct{}
	serving  sync.WaitGroup
}

// New builds a Server; it listens once Listen is called.
func New(cfg Config, store Store, tok Tokens, onceSvc Once, lockSvc Locks, reg prometheus.Registerer) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{stopping: make(chan struct{}), cfg: cfg, store: store, tok: tok, once: onceSvc, locks: lockSvc, m: newMetrics(), logger: cfg.Logger, start: time.Now(),
		conns: map[*conn]struct{}{}, ids: map[int64]*conn{}}
	s.budget.max = int64(cfg.MaxClientBuffer)
	s.m.buffered = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "idemgate_resp_client_buffer_bytes",
		Help: "Bytes the Redis-protocol listener holds for its clients against limits.max_client_buffer (each connection's first 64 KiB are not counted).",
	}, func() float64 { return float64(s.budget.used.Load()) })
	s.runs = newScriptSlots(cfg.ScriptRuns, cfg.ScriptQueueWait)
	s.turns = newKeyTurns()
	s.scripts = newScriptCache(cfg.ScriptCache, cfg.MaxScriptSize, s.runs)
	s.blocks = newBlocker(s)
	s.track = newTracker(s)
	s.ps = newPubSub()
	if store != nil { // a listener built only for its metrics has none
		store.OnKVChanged(s)
	}
	if b, ok := store.(Broadcaster); ok {
		s.bcast = b
		b.OnBroadcast(s.deliverRemote)
	}
	if ls, ok := store.(LeaderScripts); ok {
		s.leaders = ls
		ls.OnLeaderScript(s.runLeaderScript)
	}
	if cfg.Auth != nil {
		s.SetAuth(cfg.Auth)
	}
	if reg != nil {
		if err := s.m.register(reg); err != nil {
			return nil, fmt.Errorf("resp: metrics: %w", err)
		}
	}
	return s, nil
}

// Listen binds the address. A connection past MaxConnsPerIP of its address
// is refused as Redis refuses one past maxclients: an error line, then
// close.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("resp: listen %s: %w", s.cfg.Addr, err)
	}
	s.ln = conncap.NewListener(ln, s.cfg.MaxConnsPerIP, func(nc net.Conn, _ string) {
		s.m.refused.Inc()
		nc.SetWriteDeadline(time.Now().Add(time.Second))
		nc.Write([]byte("-" + msgMaxClients + "\r\n"))
	})
	return nil
}

// Addr is the bound address (after Listen).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve accepts connections until Close; it returns nil after Close.
func (s *Server) Serve() error {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return fmt.Errorf("resp: accept: %w", err)
		}
		c, ok := s.admit(nc)
		if !ok {
			continue
		}
		go func() {
			defer s.serving.Done()
			defer s.release(c)
			c.serve()
		}()
	}
}

// admit registers a connection the listener let in (within the
// per-address limit), or closes it once Close has begun.
func (s *Server) admit(nc net.Conn) (*conn, bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return nil, false
	}
	c := s.newConn(nc, conncap.RemoteIP(nc.RemoteAddr()))
	s.conns[c] = struct{}{}
	s.ids[c.id] = c
	s.serving.Add(1)
	s.mu.Unlock()
	s.m.conns.Inc()
	return c, true
}

func (s *Server) release(c *conn) {
	c.nc.Close()
	s.mu.Lock()
	delete(s.conns, c)
	delete(s.ids, c.id)
	s.mu.Unlock()
	s.track.set(c, &tracking{})
	c.wmu.Lock() // its pusher reads the subscriptions under it
	c.unsubscribeAll()
	c.wmu.Unlock()
	c.push.close()
	c.acct.keep(0)
	s.m.conns.Dec()
}

// connByID is the open connection of that id, or nil.
func (s *Server) connByID(id int64) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id]
}

func (s *Server) newConn(nc net.Conn, ip string) *conn {
	c := &conn{s: s, nc: nc, ip: ip, id: s.nextID.Add(1), created: time.Now(), proto: 2}
	c.acct = account{b: &s.budget, allow: connAllowance}
	c.r = reader{br: bufio.NewReaderSize(nc, 16<<10), acct: &c.acct,
		lim: readLimits{maxBulk: s.cfg.MaxBulk, maxArgs: s.cfg.MaxArgs, maxInline: s.cfg.MaxInline, maxRequest: s.cfg.MaxRequest}}
	c.out = &deadlineWriter{nc: nc, timeout: s.cfg.WriteTimeout}
	c.w = writer{bw: bufio.NewWriterSize(c.out, 16<<10), proto: 2, stats: &s.errs}
	c.push = pushSink{max: s.cfg.TrackingMaxPending, wake: make(chan struct{}, 1), done: make(chan struct{}), c: c,
		acct: account{b: &s.budget, allow: pushAllowance}}
	return c
}

// Close stops accepting, closes every connection (commands in flight
// finish in the store; their replies are lost) and waits for their
// goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stopping)
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.serving.Wait()
	return err
}

// clients is the number of open connections (INFO).
func (s *Server) clients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
