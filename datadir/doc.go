// Package datadir is a node's data directory as every program that opens
// one sees it: the running node (package raftstore) and the offline
// operations on a stopped one (package backup: restore, recover, compact).
//
// It owns the directory's lock (one process per directory), its modes (the
// directory is the node's own: it holds every stored response body and
// unspent token in plaintext), its owner when an operator runs an offline
// operation as root, and the two Raft stores everyone opens the same way:
// the log store (raft-wal/ or raft.db, as raft.log_store says and the
// files on disk agree; its bbolt file checked before bbolt opens it) and
// the snapshot store (snapshots/, private, written out to disk as it is
// written).
//
// It knows nothing of the state machine: fsm.db is package fsm's.
package datadir
