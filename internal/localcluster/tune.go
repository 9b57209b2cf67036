package localcluster

import (
	"io"
	"log/slog"
	"os"
	"time"
)

// Tune sets a node's Raft timings to values suited to loopback: elections
// in well under a second, so tests that kill leaders stay short.
func Tune(heartbeat, election, leaderLease, commit, apply *time.Duration) {
	*heartbeat = 400 * time.Millisecond
	*election = 400 * time.Millisecond
	*leaderLease = 200 * time.Millisecond
	*commit = 5 * time.Millisecond
	*apply = 5 * time.Second
}

// Logger is a test node's logger: quiet, unless IDEMGATE_TEST_RAFT_LOG is
// debug, info, warn or error, which shows the nodes' lines at that level,
// Raft's included, on stderr.
func Logger() *slog.Logger {
	var level slog.Level
	if v := os.Getenv("IDEMGATE_TEST_RAFT_LOG"); v != "" && level.UnmarshalText([]byte(v)) == nil {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
