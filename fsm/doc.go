// Package fsm is idemgate's replicated state machine: the commands, their
// compact binary encoding, Apply/ApplyBatch into bbolt, the reads callers use
// for fast paths, and Snapshot/Restore.
//
// It is pure and deterministic. Apply never reads a clock, a random source or
// the network: every command carries the leader's timestamp, and the state
// machine's clock is now = max(stamp, last now), persisted in the same bbolt
// transaction as the data, so every replica agrees on what has expired. The
// last applied Raft index is stored with the data and entries at or below it
// are skipped after a restart. Commands carry a request id; the results of
// recent ids are remembered so a command retried after a cut connection or a
// leadership change applies once.
//
// It never talks to Raft itself: package raftstore feeds it committed logs.
package fsm
