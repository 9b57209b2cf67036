package backup

import "time"

// SnapshotInfo describes a Raft snapshot a running node took when asked
// (raftstore's Store.TakeSnapshot, POST /v1/snapshot), or its newest one
// when there was nothing new to take. Unlike a backup it stays in the
// node's data directory, where Raft keeps it to compact its log.
type SnapshotInfo struct {
	Index uint64        // the last log index it covers
	Term  uint64        // that entry's term
	Bytes int64         // its size in the snapshot store
	Took  time.Duration // how long taking it lasted (0 when not new)
	New   bool          // false: nothing was applied since the newest one, described instead
}
