//go:build !chaos

package raftstore

import "time"

// stampNow is the leader's clock for command stamps. The chaos build
// (clock_chaos.go) can skew it.
func stampNow() int64 { return time.Now().UnixNano() }
