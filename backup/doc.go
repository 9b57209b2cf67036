// Package backup is what an operator does to a node's data apart from the
// node's own work: the backup file (its format, Spool, Verify), and the
// offline operations on a stopped node's data directory, as etcdutl's
// (snapshot restore, defrag) and Consul's peers.json recovery:
//
//   - Restore builds a new cluster's data directory from a backup file;
//   - Recover rewrites a stopped node's Raft membership when a quorum is
//     lost for good (hashicorp/raft's RecoverCluster);
//   - Compact rewrites the state machine's file to its live data.
//
// A running node takes a backup through raftstore's Store.Backup, which
// spools the state machine's snapshot into a File here; the API serves it,
// and `idemgate snapshot save` checks it with Verify as it arrives.
//
// It imports the state machine (package fsm) and the data directory's
// files (package datadir), never raftstore: the offline commands run with
// no Store at all.
package backup
