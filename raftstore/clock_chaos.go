//go:build chaos

package raftstore

import (
	"os"
	"time"
)

// clockSkew, in the chaos build only, shifts this process's stamps by the
// Go duration in IDEMGATE_CLOCK_SKEW ("1500ms", "-2s"): the T2 run's
// injectable clock, never the host's.
var clockSkew = func() time.Duration {
	d, _ := time.ParseDuration(os.Getenv("IDEMGATE_CLOCK_SKEW"))
	return d
}()

func chaosSkew() int64 { return int64(clockSkew) }
