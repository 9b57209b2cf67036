package raftstore

import "errors"

// Errors of the store's own. The errors its callers see and answer (no
// leader, timeout, removed, membership refusals, ...) are package
// storeapi's, so that the listeners need not import this package.
var (
	// ErrDataDirInUse: another process holds the data directory's lock.
	ErrDataDirInUse = errors.New("data dir in use")
)
