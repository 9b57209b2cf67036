// Package fsm is idemgate's replicated state machine: the apply function
// of each command package command declares (commands.go: the applier's
// table, by Type), Apply/ApplyBatch into bbolt, the reads callers use for
// fast paths, and Snapshot/Restore. The commands themselves (their fields,
// rules, constructors and encoding), their results and errors are package
// command's, which the faces import instead of this one; vocabulary.go
// gives their old names here until every caller imports them from there.
//
// It is pure and deterministic. Apply never reads a clock, a random source or
// the network: every command carries the leader's timestamp, and the state
// machine's clock is now = max(stamp, last now), persisted in the same bbolt
// transaction as the data, so every replica agrees on what has expired. The
// last applied Raft index is stored with the data and entries at or below it
// are skipped after a restart. Commands carry a request id; the results of
// recent ids are remembered so a command retried after a cut connection or a
// leadership change applies once. A log entry holds one command or a batch
// of them (batch.go: the leader's group commit), applied in order; each
// command gets a revision, unique and increasing, which is its KV version
// and its record's fencing token.
//
// A Lua script is never run here: the node that runs it makes its writes
// in a Sandbox (sandbox.go) with the KV commands' own apply functions, and
// its log entry is those effects with the versions the script read,
// applied whole only while they still hold (script.go).
//
// It never talks to Raft itself: package raftstore feeds it committed logs.
//
// # What it stores
//
// One bbolt file, one bucket per keyspace (fsm.go names them):
//
//	meta:     applied -> last applied index (8) | now -> the clock (8) | rev -> the last revision (8) | format -> 1
//	records:  RecordKey(scope, tenant, key) -> Record.Encode
//	tokens:   TokenKey(scope, token) -> expiry (8, unix ns; 0 = never)
//	kv:       key -> version (8) | created (8) | expiry (8) | value (KVEntry)
//	reqids:   <generation>/request id -> the answer of a command that changed state (reqid.go)
//	digests:  DigestKey(scope, tenant, digest) -> expiry (8) | record key (suspect.go)
//	suspects: revision (8) -> at (8) | record key (len-prefixed) | earlier record key
//	ttl:      expiry (8) | kind (1) | key -> (nothing): the expiry index (expiry_index.go)
//
// Integers are big endian, so keys sort by them.
package fsm
