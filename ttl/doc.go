// Package ttl owns the expiry index and the leader's sweeper.
//
// The index is one bbolt bucket whose keys sort by expiry time:
//
//	expiry (8 bytes, big-endian unix nanoseconds) | kind (1 byte) | entry key
//
// so the entries due at a given time are a prefix scan. The index is written
// only inside the state machine's transactions (package fsm calls Put and
// Delete while it applies a command), so it is replicated and deterministic
// like everything else the state machine holds.
//
// The Sweeper never deletes anything itself: on a node that has just verified
// its leadership it reads the due entries and proposes an expire command
// through the small Proposer interface, so removal is a replicated command
// too. It never imports the raft wiring.
package ttl
