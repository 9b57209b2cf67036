package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/gateway"
	"github.com/idemgate/idemgate/raftstore"
	"github.com/idemgate/idemgate/tokens"
)

// serveFlags are the command line of `idemgate serve`.
type serveFlags struct {
	configPath, nodeID            string
	listen, apiListen, raftListen string
	dataDir, upstream, logLevel   string
}

func parseServeFlags(args []string, stdout io.Writer) (serveFlags, error) {
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported in one line by the caller
	fs.StringVar(&f.configPath, "config", "", "cluster file (YAML); without it: the embedded single-node default")
	fs.StringVar(&f.nodeID, "node", "", "this node's id in the cluster file (required with --config when the file has several nodes)")
	fs.StringVar(&f.listen, "listen", "", "gateway listener address (overrides the file)")
	fs.StringVar(&f.apiListen, "api-listen", "", "API listener address (overrides the file)")
	fs.StringVar(&f.raftListen, "raft-listen", "", "Raft address (overrides the file)")
	fs.StringVar(&f.dataDir, "data-dir", "", "data directory (overrides the file)")
	fs.StringVar(&f.upstream, "upstream", "", "upstream URL (overrides the file)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: idemgate serve [--config FILE --node ID] [flags]")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
		}
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return f, nil
}

// nodeSettings is everything one node needs, resolved from the file and flags.
type nodeSettings struct {
	file    *config.File
	node    config.Node
	dataDir string
}

func resolveNode(f serveFlags) (nodeSettings, error) {
	var file *config.File
	if f.configPath == "" {
		file = config.Default()
	} else {
		var err error
		if file, err = config.Load(f.configPath); err != nil {
			return nodeSettings{}, err
		}
	}
	id := f.nodeID
	if id == "" {
		if len(file.Nodes) != 1 {
			return nodeSettings{}, errors.New("--node: required: the cluster file has several nodes")
		}
		id = file.Nodes[0].ID
	}
	node, err := file.Node(id)
	if err != nil {
		return nodeSettings{}, err
	}
	for _, o := range []struct {
		flag string
		val  string
		dst  *string
	}{{"--listen", f.listen, &node.Listen}, {"--api-listen", f.apiListen, &node.API}, {"--raft-listen", f.raftListen, &node.Raft}} {
		if o.val == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(o.val); err != nil {
			return nodeSettings{}, fmt.Errorf("%s: %q is not host:port", o.flag, o.val)
		}
		*o.dst = o.val
	}
	for i := range file.Nodes {
		if file.Nodes[i].ID == id {
			file.Nodes[i] = node
		}
	}
	if f.upstream != "" {
		u, err := url.Parse(f.upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nodeSettings{}, fmt.Errorf("--upstream: %q: want an http:// or https:// URL", f.upstream)
		}
		file.Upstream = f.upstream
	}
	s := nodeSettings{file: file, node: node, dataDir: file.DataDirFor(id)}
	if f.dataDir != "" {
		s.dataDir = f.dataDir
	}
	return s, nil
}

func serveCmd(args []string, stdout, stderr io.Writer) int {
	flags, err := parseServeFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "idemgate serve: %v\n", err)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(flags.logLevel)); err != nil {
		fmt.Fprintf(stderr, "idemgate serve: --log-level: %q: want debug, info, warn or error\n", flags.logLevel)
		return 2
	}
	settings, err := resolveNode(flags)
	if err != nil {
		fmt.Fprintf(stderr, "idemgate serve: %s\n", strings.TrimPrefix(err.Error(), "config: "))
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, settings, logger, stdout); err != nil {
		logger.Error("serve failed", "error", err)
		return 1
	}
	return 0
}

// serve runs one node until ctx ends, then shuts down cleanly: stop
// accepting, drain in-flight requests, close Raft and bbolt.
func serve(ctx context.Context, s nodeSettings, logger *slog.Logger, stdout io.Writer) error {
	file, node := s.file, s.node
	rc := raftstore.DefaultConfig()
	rc.NodeID, rc.RaftBind, rc.DataDir = node.ID, node.Raft, s.dataDir
	for _, n := range file.Nodes {
		rc.Peers = append(rc.Peers, raftstore.Peer{ID: n.ID, RaftAddr: n.Raft})
	}
	rc.HeartbeatTimeout = file.Raft.HeartbeatTimeout.D()
	rc.ElectionTimeout = file.Raft.ElectionTimeout.D()
	rc.LeaderLeaseTimeout = rc.HeartbeatTimeout / 2
	rc.SnapshotThreshold = file.Raft.SnapshotThreshold
	rc.SnapshotInterval = file.Raft.SnapshotInterval.D()
	rc.ApplyTimeout = file.Raft.ApplyTimeout.D()
	rc.FSMNoSync = !file.Raft.FSMFsync
	rc.Logger = logger
	rc.RaftLogOutput = os.Stderr
	store, err := raftstore.Open(rc)
	if err != nil {
		return err
	}
	defer func() {
		if err := store.Close(); err != nil {
			logger.Warn("close store", "error", err)
		}
	}()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := store.Register(reg); err != nil {
		return err
	}
	tok := tokens.New(store, file.Tokens.TTL.D())
	if err := tok.Register(reg); err != nil {
		return err
	}
	nodeAPIs := map[string]string{}
	for _, n := range file.Nodes {
		nodeAPIs[n.ID] = n.API
	}
	lim := file.Limits
	api := gateway.NewAPI(gateway.APIConfig{
		Addr: node.API, NodeAPIs: nodeAPIs, OpTimeout: rc.ApplyTimeout,
		ReadTimeout: lim.ReadTimeout.D(), WriteTimeout: lim.WriteTimeout.D(), IdleTimeout: lim.IdleTimeout.D(),
		MaxRequestBody: int(lim.MaxRequestBody), MaxHeaderBytes: int(lim.MaxHeaderBytes), MaxConnsPerIP: lim.MaxConnsPerIP,
		Logger: logger,
	}, store, tok, reg)
	gcfg := gateway.DefaultConfig()
	gcfg.Addr, gcfg.Upstream, gcfg.Routes = node.Listen, file.Upstream, file.Routes
	gcfg.SuspectWindow, gcfg.OpTimeout = file.Suspects.Window.D(), rc.ApplyTimeout
	gcfg.ReadTimeout, gcfg.WriteTimeout, gcfg.IdleTimeout = lim.ReadTimeout.D(), lim.WriteTimeout.D(), lim.IdleTimeout.D()
	gcfg.MaxRequestBody, gcfg.MaxHeaderBytes = int(lim.MaxRequestBody), int(lim.MaxHeaderBytes)
	gcfg.MaxConnsPerIP, gcfg.Concurrency = lim.MaxConnsPerIP, lim.Concurrency
	gcfg.UpstreamTimeout, gcfg.UpstreamConns = lim.UpstreamTimeout.D(), lim.UpstreamConns
	gcfg.MaxResponseBody = int(lim.MaxResponseBody)
	gcfg.Logger = logger
	gw, err := gateway.New(gcfg, store, tok)
	if err != nil {
		return err
	}
	if err := gw.Register(reg); err != nil {
		return err
	}
	if err := api.Listen(); err != nil {
		return err
	}
	if err := gw.Listen(); err != nil {
		return err
	}
	errs := make(chan error, 2)
	go func() { errs <- api.Serve() }()
	go func() { errs <- gw.Serve() }()
	fmt.Fprintf(stdout, "idemgate %s: node %s, gateway http://%s -> %s, api http://%s, raft %s, data %s\n",
		version, node.ID, gw.Addr(), file.Upstream, api.Addr(), node.Raft, s.dataDir)

	select {
	case <-ctx.Done():
		logger.Info("shutting down", "node", node.ID)
	case err := <-errs:
		return fmt.Errorf("listener: %w", err)
	case <-store.FSM().Failed():
		return fmt.Errorf("state machine storage failed: %w", store.FSM().FailErr())
	}
	// Stop accepting and drain in-flight requests, then (deferred) close
	// Raft and bbolt.
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := gw.Shutdown(sctx); err != nil {
		logger.Warn("gateway shutdown", "error", err)
	}
	if err := api.Shutdown(sctx); err != nil {
		logger.Warn("api shutdown", "error", err)
	}
	return nil
}
