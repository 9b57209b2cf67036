package storeapi

import (
	"io"
	"time"
)

// Backup is a backup of a node's state (package backup's file), ready to
// be read once, front to back, and closed: Close releases what is left of
// it (a spooled file).
type Backup struct {
	io.ReadCloser
	// Index is the last Raft index the state machine had applied: every
	// write acknowledged before the backup was asked for is at or below it.
	Index uint64
	// Term is the node's Raft term when it was taken (at least the term of
	// the entry at Index).
	Term uint64
	Size int64 // bytes
}

// SnapshotInfo describes a Raft snapshot a running node took when asked
// (POST /v1/snapshot), or its newest one when there was nothing new to
// take. Unlike a backup it stays in the node's data directory, where Raft
// keeps it to compact its log.
type SnapshotInfo struct {
	Index uint64        // the last log index it covers
	Term  uint64        // that entry's term
	Bytes int64         // its size in the snapshot store
	Took  time.Duration // how long taking it lasted (0 when not new)
	New   bool          // false: nothing was applied since the newest one, described instead
}
