// Package ttl owns what expires and the leader's sweeper.
//
// An Entry says that a thing of a Kind (a record, a token, a KV key, a
// claim, a lock) expires at a time. The state machine (package fsm) keeps
// them in its expiry index, written only inside its transactions, so the
// index is replicated and deterministic like everything else it holds; an
// expire command (package command) carries the entries to remove. Kind's
// values are in the index's keys and in the command's encoding: they are
// never renumbered.
//
// The Sweeper never deletes anything itself: on a node that has just verified
// its leadership it reads the due entries and proposes an expire command
// through the small Proposer interface, so removal is a replicated command
// too. It never imports the raft wiring, nor the storage: package command,
// and through it every face, uses Kind and Entry without reaching bbolt.
package ttl
