//go:build !chaos

package raftstore

// chaosSkew shifts this process's stamps; only the chaos build
// (clock_chaos.go) skews them.
func chaosSkew() int64 { return 0 }
