package cmd

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

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/node"
	"github.com/idemgate/idemgate/version"
)

// serveFlags are the command line of `idemgate serve`.
type serveFlags struct {
	configPath, nodeID            string
	listen, apiListen, raftListen string
	dataDir, upstream             string
	logLevel, logFormat           string
	bootstrap, join               bool
}

// serveUsage is the first line of `idemgate serve -h`.
const serveUsage = "idemgate serve [--config FILE --node ID] [flags]"

// parseServeFlags parses the command line of `idemgate serve`; ok false
// means it has answered (-h, or a bad command line) with code.
func parseServeFlags(args []string, stdout, stderr io.Writer) (f serveFlags, code int, ok bool) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&f.configPath, "config", "", "cluster file (YAML); without it: the embedded single-node default")
	fs.StringVar(&f.nodeID, "node", "", "this node's id in the cluster file (required with --config when the file has several nodes)")
	fs.StringVar(&f.listen, "listen", "", "gateway listener address (overrides the file)")
	fs.StringVar(&f.apiListen, "api-listen", "", "API listener address (overrides the file)")
	fs.StringVar(&f.raftListen, "raft-listen", "", "Raft address (overrides the file)")
	fs.StringVar(&f.dataDir, "data-dir", "", "data directory (overrides the file)")
	fs.StringVar(&f.upstream, "upstream", "", "upstream URL (overrides the file)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error (Raft's lines too)")
	fs.StringVar(&f.logFormat, "log-format", "text", "text (key=value) or json (one object per line)")
	fs.BoolVar(&f.bootstrap, "bootstrap", false, "form a new cluster of the file's nodes when this node has no data and every node of the file answers and holds none (a new cluster's first start; ignored once the node holds data)")
	fs.BoolVar(&f.join, "join", false, "wait to be added to a running cluster (POST /v1/cluster/nodes on a member): what a node with no data does without --bootstrap")
	if _, code, ok := commandLine(fs, "serve", serveUsage, "", args, stdout, stderr); !ok {
		return f, code, false
	}
	if f.bootstrap && f.join {
		fmt.Fprintln(stderr, "idemgate serve: --bootstrap and --join: a node either forms a new cluster or joins one")
		return f, 2, false
	}
	return f, 0, true
}

func resolveNode(f serveFlags) (node.Settings, error) {
	var file *config.File
	if f.configPath == "" {
		file = config.Default()
	} else {
		var err error
		if file, err = config.Load(f.configPath); err != nil {
			return node.Settings{}, err
		}
	}
	id := f.nodeID
	if id == "" {
		if len(file.Nodes) != 1 {
			return node.Settings{}, errors.New("--node: required: the cluster file has several nodes")
		}
		id = file.Nodes[0].ID
	}
	nd, err := file.Node(id)
	if err != nil {
		return node.Settings{}, err
	}
	for _, o := range []struct {
		flag string
		val  string
		dst  *string
	}{{"--listen", f.listen, &nd.Listen}, {"--api-listen", f.apiListen, &nd.API}, {"--raft-listen", f.raftListen, &nd.Raft}} {
		if o.val == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(o.val); err != nil {
			return node.Settings{}, fmt.Errorf("%s: %q is not host:port", o.flag, o.val)
		}
		*o.dst = o.val
	}
	for i := range file.Nodes {
		if file.Nodes[i].ID == id {
			file.Nodes[i] = nd
		}
	}
	if f.upstream != "" {
		u, err := url.Parse(f.upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return node.Settings{}, fmt.Errorf("--upstream: %q: want an http:// or https:// URL", f.upstream)
		}
		file.Upstream = f.upstream
	}
	s := node.Settings{File: file, Node: nd, DataDir: file.DataDirFor(id)}
	if f.dataDir != "" {
		s.DataDir = f.dataDir
	}
	if err := file.CheckExposure(nd); err != nil {
		return node.Settings{}, err
	}
	if err := s.LoadTLS(); err != nil {
		return node.Settings{}, err
	}
	if s.Access, err = node.APIAccess(file); err != nil {
		return node.Settings{}, err
	}
	s.ConfigPath = f.configPath
	// Without a cluster file the node is the embedded single-node
	// default, a cluster of its own: it bootstraps without being told.
	s.Bootstrap = f.bootstrap || f.configPath == ""
	return s, nil
}

func serveCmd(args []string, stdout, stderr io.Writer) int {
	flags, code, ok := parseServeFlags(args, stdout, stderr)
	if !ok {
		return code
	}
	logger, err := newLogger(stderr, flags.logLevel, flags.logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "idemgate serve: %v\n", err)
		return 2
	}
	settings, err := resolveNode(flags)
	if err != nil {
		fmt.Fprintf(stderr, "idemgate serve: %s\n", config.Detail(err))
		return 2
	}
	// Go's log package, and whatever logs to slog's default, write
	// through the node's logger too: one format on stderr.
	slog.SetDefault(logger)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, settings, logger, stdout); err != nil {
		var start startError
		if errors.As(err, &start) {
			// One plain line, as for a bad config: a node that cannot
			// start (a damaged data file says what to do) is read by a
			// person.
			fmt.Fprintf(stderr, "idemgate serve: %v\n", err)
		} else {
			logger.Error("stopped", "node", settings.Node.ID, "error", err)
		}
		return 1
	}
	return 0
}

// logLevels are --log-level's values.
var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// newLogger is the logger every line of serve goes through (Raft's by the
// store's hclog adapter), or an error naming the flag at fault.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	lv, ok := logLevels[strings.ToLower(level)]
	if !ok {
		return nil, fmt.Errorf("--log-level: %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q: want text or json", format)
}

// startError is a node that could not start: its message is the command's
// last line, plain, whatever the log format.
type startError struct{ error }

func (e startError) Unwrap() error { return e.error }

// serve runs one node until ctx ends, then shuts down cleanly: stop
// accepting, drain in-flight requests, close Raft and bbolt.
func serve(ctx context.Context, s node.Settings, logger *slog.Logger, stdout io.Writer) error {
	pace := node.PaceCollector()
	memLimit := node.LimitMemory(ctx, int64(s.File.MemoryLimit), logger)
	n, err := node.Start(s, logger)
	if err != nil {
		return startError{err}
	}
	raftSecurity := "plaintext"
	if s.PeerTLS != nil {
		raftSecurity = "mutual TLS"
	}
	fmt.Fprintf(stdout, "idemgate %s: node %s, %s, api %s://%s, raft %s (%s), data %s\n",
		version.String(), s.Node.ID, n.GatewayLine(s.File.Upstream), n.API.Scheme(), n.API.Addr(), s.Node.Raft, raftSecurity, s.DataDir)
	if n.Resp != nil {
		fmt.Fprintf(stdout, "idemgate %s: node %s, redis protocol on %s\n", version.String(), s.Node.ID, n.Resp.Addr())
	}
	gw := "off"
	if n.GW != nil {
		gw = n.GW.Scheme() + "://" + n.GW.Addr()
	}
	logger.Info("serving", "version", version.String(), "node", s.Node.ID, "gateway", gw,
		"upstream", s.File.Upstream, "api", n.API.Scheme()+"://"+n.API.Addr(), "raft", s.Node.Raft, "raft_security", raftSecurity,
		"data_dir", s.DataDir, "gogc", pace, "memory_limit_mib", memLimit>>20)
	if s.File.Insecure {
		logger.Warn("insecure: true: the Raft and API ports may be reachable without TLS or tokens", "node", s.Node.ID)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var runErr error
	drain := 10 * time.Second // for in-flight requests to be answered
wait:
	for {
		select {
		case <-hup:
			s.Reload(n, logger)
			continue
		case <-n.Store.Stopped():
			// Its Raft stopped for good (the disk guard, a storage
			// failure): the node serves nothing, and the process exits 1,
			// its last line saying why, for its supervisor to see.
			runErr = fmt.Errorf("raft stopped: %w", n.Store.StopReason())
			// Its requests can only fail now, yet one forwarded or
			// retried may wait for its apply timeout: those not answered
			// within a second are cut, so the process exits within a
			// second of the stop.
			drain = time.Second
		case <-ctx.Done():
			logger.Info("shutting down", "node", s.Node.ID)
		case err := <-n.Errs:
			runErr = fmt.Errorf("listener: %w", err)
		case <-n.Store.FSM().Failed():
			runErr = fmt.Errorf("state machine storage failed: %w", n.Store.FSM().FailErr())
		}
		break wait
	}
	n.Stop(drain)
	return runErr
}
