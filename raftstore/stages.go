package raftstore

import (
	"time"

	gometrics "github.com/hashicorp/go-metrics/compat"
)

// Stage timers of a write. hashicorp/raft and raft-boltdb time their own
// stages (the leader's log write, each AppendEntries, a follower's log
// write, the commit, the state machine's batch) through go-metrics; the
// store times the stages around them the same way, so one sink sees a
// write's whole way (idemgate bench --breakdown installs one). Without a
// sink, go-metrics discards them. The keys are package variables: a key
// built per call would cost an allocation on every write.
var (
	// stageQueued: from a command's hand-off to the coalescer to its
	// batch's hand-off to Raft (waiting for the batch in flight).
	stageQueued = []string{"idemgate", "store", "queued"}
	// stageRaft: from a batch's hand-off to Raft to Raft's answer (the
	// log writes, replication, commit and the state machine's apply).
	stageRaft = []string{"idemgate", "store", "raft"}
	// stageWake: from a batch's answer to its caller running again.
	stageWake = []string{"idemgate", "store", "wake"}
	// stageForward: a follower's round trip to the leader for one write.
	stageForward = []string{"idemgate", "store", "forward"}
	// stageApply: Store.Apply, whole (every retry, forwarding included).
	stageApply = []string{"idemgate", "store", "apply"}
)

// measureSince records the time since start under key, if a sink listens.
func measureSince(key []string, start time.Time) { gometrics.MeasureSince(key, start) }
