//go:build mutants

package raftstore

// The planted bugs (see mutants.go), settable in this build only.
var (
	mutantLocalReads          bool
	mutantNewRequestIDOnRetry bool
)
